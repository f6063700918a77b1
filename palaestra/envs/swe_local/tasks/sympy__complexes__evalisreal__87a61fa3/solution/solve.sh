#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/functions/elementary/complexes.py
+++ b/sympy/functions/elementary/complexes.py
@@ -617,7 +617,7 @@
                 return sqrt(expand_mul(arg*conj))
 
     def _eval_is_real(self):
-        if self.args[1].is_finite:
+        if self.args[0].is_finite:
             return True
 
     def _eval_is_integer(self):
PALAESTRA_FIX
