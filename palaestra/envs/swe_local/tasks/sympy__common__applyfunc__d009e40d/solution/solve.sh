#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/matrices/common.py
+++ b/sympy/matrices/common.py
@@ -2052,7 +2052,7 @@
         [4, 6]])
 
         """
-        if (callable(f)):
+        if not callable(f):
             raise TypeError("`f` must be callable.")
 
         return self._eval_applyfunc(f)
PALAESTRA_FIX
