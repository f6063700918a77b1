#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/functions/elementary/exponential.py
+++ b/sympy/functions/elementary/exponential.py
@@ -952,7 +952,7 @@
         return self.args[0].is_extended_positive
 
     def _eval_is_complex(self):
-        z = self.args[1]
+        z = self.args[0]
         return fuzzy_and([z.is_complex, fuzzy_not(z.is_zero)])
 
     def _eval_is_finite(self):
PALAESTRA_FIX
