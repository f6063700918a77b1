#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/polys/partfrac.py
+++ b/sympy/polys/partfrac.py
@@ -408,7 +408,7 @@
 
             Dw = D.subs(x, next(dummygen))
             numer = Lambda(a, b.as_expr().subs(x, a))
-            denom = Lambda(a, (x + a))
+            denom = Lambda(a, (x - a))
             exponent = n-j
 
             partial.append((Dw, numer, denom, exponent))
PALAESTRA_FIX
