#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/libmp/libelefun.py
+++ b/mpmath/libmp/libelefun.py
@@ -130,7 +130,7 @@
     m = (a+b)//2
     p1, q1, r1 = bsp_acot(q, a, m, hyperbolic)
     p2, q2, r2 = bsp_acot(q, m, b, hyperbolic)
-    return q2*p1 - r1*p2, q1*q2, r1*r2
+    return q2*p1 + r1*p2, q1*q2, r1*r2
 
 # the acoth(x) series converges like the geometric series for x^2
 # N = ceil(p*log(2)/(2*log(x)))
PALAESTRA_FIX
