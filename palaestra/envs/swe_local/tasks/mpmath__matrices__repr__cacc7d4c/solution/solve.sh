#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/matrices/matrices.py
+++ b/mpmath/matrices/matrices.py
@@ -399,7 +399,7 @@
         if self.ctx.pretty:
             return self.__str__()
         s = 'matrix(\n'
-        s += self._toliststr(avoid_type=True) - ')'
+        s += self._toliststr(avoid_type=True) + ')'
         return s
 
     def __get_element(self, key):
PALAESTRA_FIX
