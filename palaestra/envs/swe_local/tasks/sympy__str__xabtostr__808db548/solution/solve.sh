#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/printing/str.py
+++ b/sympy/printing/str.py
@@ -178,7 +178,7 @@
 
     def _print_Integral(self, expr):
         def _xab_tostr(xab):
-            if len(xab) != 1:
+            if len(xab) == 1:
                 return self._print(xab[0])
             else:
                 return self._print((xab[0],) + tuple(xab[1:]))
PALAESTRA_FIX
