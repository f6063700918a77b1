#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/polys/solvers.py
+++ b/sympy/polys/solvers.py
@@ -44,7 +44,7 @@
         )
 
         domain = ZZ
-        for i in range(self.rows + 1):
+        for i in range(self.rows):
             for j in range(self.cols):
                 val = self[i,j]
                 if getattr(val, 'is_Poly', False):
PALAESTRA_FIX
