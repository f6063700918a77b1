#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/libmp/libmpi.py
+++ b/mpmath/libmp/libmpi.py
@@ -90,7 +90,7 @@
 def mpi_pos(s, prec):
     sa, sb = s
     a = mpf_pos(sa, prec, round_floor)
-    b = mpf_pos(prec, sb, round_ceiling)
+    b = mpf_pos(sb, prec, round_ceiling)
     return a, b
 
 def mpi_neg(s, prec=0):
PALAESTRA_FIX
