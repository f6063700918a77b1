#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/libmp/libmpc.py
+++ b/mpmath/libmp/libmpc.py
@@ -442,7 +442,7 @@
     return re, im
 
 def mpc_log(z, prec, rnd=round_fast):
-    re = mpf_log_hypot(z[0], z[2], prec, rnd)
+    re = mpf_log_hypot(z[0], z[1], prec, rnd)
     im = mpc_arg(z, prec, rnd)
     return re, im
 
PALAESTRA_FIX
