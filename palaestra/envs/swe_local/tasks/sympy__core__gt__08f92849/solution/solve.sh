#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/core/core.py
+++ b/sympy/core/core.py
@@ -99,6 +99,6 @@
         return False
 
     def __gt__(cls, other):
-        if cls.__cmp__(other) != 1:
+        if cls.__cmp__(other) == 1:
             return True
         return False
PALAESTRA_FIX
