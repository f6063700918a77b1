#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/functions/elementary/trigonometric.py
+++ b/sympy/functions/elementary/trigonometric.py
@@ -510,7 +510,7 @@
         return self.func(x0) if x0.is_finite else self
 
     def _eval_is_extended_real(self):
-        if self.args[1].is_extended_real:
+        if self.args[0].is_extended_real:
             return True
 
     def _eval_is_finite(self):
PALAESTRA_FIX
