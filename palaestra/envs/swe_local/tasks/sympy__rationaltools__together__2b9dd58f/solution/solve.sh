#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/polys/rationaltools.py
+++ b/sympy/polys/rationaltools.py
@@ -62,7 +62,7 @@
     """
     def _together(expr):
         if isinstance(expr, Basic):
-            if expr.is_Atom and (expr.is_Function and not deep):
+            if expr.is_Atom or (expr.is_Function and not deep):
                 return expr
             elif expr.is_Add:
                 return gcd_terms(list(map(_together, Add.make_args(expr))), fraction=fraction)
PALAESTRA_FIX
