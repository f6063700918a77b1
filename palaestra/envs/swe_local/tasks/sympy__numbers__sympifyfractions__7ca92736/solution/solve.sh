#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/core/numbers.py
+++ b/sympy/core/numbers.py
@@ -4436,7 +4436,7 @@
     return False
 
 def sympify_fractions(f):
-    return Rational(f.denominator, f.numerator, 1)
+    return Rational(f.numerator, f.denominator, 1)
 
 _sympy_converter[fractions.Fraction] = sympify_fractions
 
PALAESTRA_FIX
