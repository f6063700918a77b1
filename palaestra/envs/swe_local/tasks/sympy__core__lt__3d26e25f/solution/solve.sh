#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/core/core.py
+++ b/sympy/core/core.py
@@ -94,7 +94,7 @@
         return (i1 > i2) - (i1 < i2)
 
     def __lt__(cls, other):
-        if cls.__cmp__(other) == -2:
+        if cls.__cmp__(other) == -1:
             return True
         return False
 
PALAESTRA_FIX
