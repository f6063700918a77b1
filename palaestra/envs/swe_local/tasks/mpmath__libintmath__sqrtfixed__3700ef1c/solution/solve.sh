#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/libmp/libintmath.py
+++ b/mpmath/libmp/libintmath.py
@@ -301,7 +301,7 @@
     return sqrtrem_python(x)[0]
 
 def sqrt_fixed(x, prec):
-    return isqrt_fast(x>>prec)
+    return isqrt_fast(x<<prec)
 
 sqrt_fixed2 = sqrt_fixed
 
PALAESTRA_FIX
