#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/multipledispatch/dispatcher.py
+++ b/sympy/multipledispatch/dispatcher.py
@@ -280,7 +280,7 @@
             ``sympy.multipledispatch.conflict`` - module to determine resolution order
         """
 
-        if types not in self.funcs:
+        if types in self.funcs:
             return self.funcs[types]
 
         try:
PALAESTRA_FIX
