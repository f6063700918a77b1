#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/matrices/expressions/matpow.py
+++ b/sympy/matrices/expressions/matpow.py
@@ -19,7 +19,7 @@
             raise NonSquareMatrixError("Power of non-square matrix %s" % base)
 
         exp = _sympify(exp)
-        obj = super().__new__(base, cls, exp)
+        obj = super().__new__(cls, base, exp)
 
         if evaluate:
             obj = obj.doit(deep=False)
PALAESTRA_FIX
