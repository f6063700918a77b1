#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/libmp/libmpc.py
+++ b/mpmath/libmp/libmpc.py
@@ -187,7 +187,7 @@
 
 def mpc_mul_int(z, n, prec, rnd=round_fast):
     a, b = z
-    re = mpf_mul_int(n, a, prec, rnd)
+    re = mpf_mul_int(a, n, prec, rnd)
     im = mpf_mul_int(b, n, prec, rnd)
     return re, im
 
PALAESTRA_FIX
