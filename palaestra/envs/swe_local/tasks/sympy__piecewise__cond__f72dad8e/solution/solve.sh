#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/functions/elementary/piecewise.py
+++ b/sympy/functions/elementary/piecewise.py
@@ -47,7 +47,7 @@
         """
         Returns the condition of this pair.
         """
-        return self.args[2]
+        return self.args[1]
 
     @property
     def is_commutative(self):
PALAESTRA_FIX
