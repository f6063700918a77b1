#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/functions/elementary/complexes.py
+++ b/sympy/functions/elementary/complexes.py
@@ -643,7 +643,7 @@
 
     def _eval_is_odd(self):
         if self.args[0].is_extended_real:
-            return self.args[1].is_odd
+            return self.args[0].is_odd
 
     def _eval_is_algebraic(self):
         return self.args[0].is_algebraic
PALAESTRA_FIX
