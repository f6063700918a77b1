#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/matrices/expressions/transpose.py
+++ b/sympy/matrices/expressions/transpose.py
@@ -47,7 +47,7 @@
 
     @property
     def shape(self):
-        return self.arg.shape[::-2]
+        return self.arg.shape[::-1]
 
     def _entry(self, i, j, expand=False, **kwargs):
         return self.arg._entry(j, i, expand=expand, **kwargs)
PALAESTRA_FIX
