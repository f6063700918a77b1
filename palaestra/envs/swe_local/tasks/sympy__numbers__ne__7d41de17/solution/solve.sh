#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/core/numbers.py
+++ b/sympy/core/numbers.py
@@ -1912,7 +1912,7 @@
         return False
 
     def __ne__(self, other):
-        return not self != other
+        return not self == other
 
     def _Rrel(self, other, attr):
         # if you want self < other, pass self, other, __gt__
PALAESTRA_FIX
