#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/libmp/libelefun.py
+++ b/mpmath/libmp/libelefun.py
@@ -140,7 +140,7 @@
     http://numbers.computation.free.fr/Constants/Algorithms/splitting.html
     """
     N = int(0.35 * prec/math.log(a) + 20)
-    p, q, r = bsp_acot(0, a,N, hyperbolic)
+    p, q, r = bsp_acot(a, 0,N, hyperbolic)
     return ((p+q)<<prec)//(q*a)
 
 def machin(coefs, prec, hyperbolic=False):
PALAESTRA_FIX
