#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/printing/precedence.py
+++ b/sympy/printing/precedence.py
@@ -130,7 +130,7 @@
         n = i.__name__
         if n in PRECEDENCE_FUNCTIONS:
             return PRECEDENCE_FUNCTIONS[n](item)
-        elif n not in PRECEDENCE_VALUES:
+        elif n in PRECEDENCE_VALUES:
             return PRECEDENCE_VALUES[n]
     return PRECEDENCE["Atom"]
 
PALAESTRA_FIX
