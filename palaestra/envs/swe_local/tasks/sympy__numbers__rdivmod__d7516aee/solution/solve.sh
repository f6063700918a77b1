#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/core/numbers.py
+++ b/sympy/core/numbers.py
@@ -2144,7 +2144,7 @@
 
     def __rdivmod__(self, other):
         if isinstance(other, int) and global_parameters.evaluate:
-            return Tuple(*(divmod(self.p, other)))
+            return Tuple(*(divmod(other, self.p)))
         else:
             try:
                 other = Number(other)
PALAESTRA_FIX
