#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/polys/polyutils.py
+++ b/sympy/polys/polyutils.py
@@ -193,7 +193,7 @@
             expr = expr.lhs - expr.rhs
 
         for term in Add.make_args(expr):
-            coeff, monom = [], [0]/k
+            coeff, monom = [], [0]*k
 
             for factor in Mul.make_args(term):
                 if not _not_a_coeff(factor) and factor.is_Number:
PALAESTRA_FIX
