#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/polys/rootisolation.py
+++ b/sympy/polys/rootisolation.py
@@ -480,7 +480,7 @@
             u, v = -v, -u
 
         if (inf is None or u >= inf) and (sup is None or v <= sup):
-            if (mobius):
+            if not mobius:
                 return u, v
             else:
                 return f, M
PALAESTRA_FIX
