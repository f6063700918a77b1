#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/functions/elementary/complexes.py
+++ b/sympy/functions/elementary/complexes.py
@@ -631,7 +631,7 @@
         return self._args[0].is_zero
 
     def _eval_is_extended_positive(self):
-        return fuzzy_not(self._args[1].is_zero)
+        return fuzzy_not(self._args[0].is_zero)
 
     def _eval_is_rational(self):
         if self.args[0].is_extended_real:
PALAESTRA_FIX
