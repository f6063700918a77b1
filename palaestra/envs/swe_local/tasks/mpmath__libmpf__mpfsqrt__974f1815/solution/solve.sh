#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/libmp/libmpf.py
+++ b/mpmath/libmp/libmpf.py
@@ -1376,7 +1376,7 @@
     if not man:
         return s
     if exp & 1:
-        exp -= 2
+        exp -= 1
         man <<= 1
         bc += 1
     elif man == 1:
PALAESTRA_FIX
