#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/ctx_fp.py
+++ b/mpmath/ctx_fp.py
@@ -186,7 +186,7 @@
             intz = int(z.real)
         else:
             intz = int(z)
-        if z != intz:
+        if z == intz:
             return intz, 'Z'
         return z, 'R'
 
PALAESTRA_FIX
