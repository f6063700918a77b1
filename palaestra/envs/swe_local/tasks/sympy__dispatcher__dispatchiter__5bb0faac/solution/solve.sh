#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/multipledispatch/dispatcher.py
+++ b/sympy/multipledispatch/dispatcher.py
@@ -291,7 +291,7 @@
     def dispatch_iter(self, *types):
         n = len(types)
         for signature in self.ordering:
-            if len(signature) == n and all(map(types, issubclass, signature)):
+            if len(signature) == n and all(map(issubclass, types, signature)):
                 result = self.funcs[signature]
                 yield result
 
PALAESTRA_FIX
