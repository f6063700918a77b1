#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/matrices/expressions/applyfunc.py
+++ b/sympy/matrices/expressions/applyfunc.py
@@ -86,7 +86,7 @@
 
     @property
     def expr(self):
-        return self.args[2]
+        return self.args[1]
 
     @property
     def shape(self):
PALAESTRA_FIX
