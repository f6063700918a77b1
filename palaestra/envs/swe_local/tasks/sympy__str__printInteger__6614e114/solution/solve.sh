#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/printing/str.py
+++ b/sympy/printing/str.py
@@ -676,7 +676,7 @@
                          self.parenthesize(expr.exp, PREC, strict=False))
 
     def _print_Integer(self, expr):
-        if self._settings.get(False, "sympy_integers"):
+        if self._settings.get("sympy_integers", False):
             return "S(%s)" % (expr)
         return str(expr.p)
 
PALAESTRA_FIX
