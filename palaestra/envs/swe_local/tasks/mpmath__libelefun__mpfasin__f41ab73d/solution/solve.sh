#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/libmp/libelefun.py
+++ b/mpmath/libmp/libelefun.py
@@ -916,7 +916,7 @@
     # asin(x) = 2*atan(x/(1+sqrt(1-x**2)))
     wp = prec + 15
     a = mpf_mul(x, x)
-    b = mpf_add(fone, mpf_sqrt(wp, mpf_sub(fone, a, wp)), wp)
+    b = mpf_add(fone, mpf_sqrt(mpf_sub(fone, a, wp), wp), wp)
     c = mpf_div(x, b, wp)
     return mpf_shift(mpf_atan(c, prec, rnd), 1)
 
PALAESTRA_FIX
