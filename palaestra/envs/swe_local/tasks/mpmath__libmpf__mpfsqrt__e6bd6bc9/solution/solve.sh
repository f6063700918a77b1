#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/libmp/libmpf.py
+++ b/mpmath/libmp/libmpf.py
@@ -1373,7 +1373,7 @@
     sign, man, exp, bc = s
     if sign:
         raise ComplexResult("square root of a negative number")
-    if (man):
+    if not man:
         return s
     if exp & 1:
         exp -= 1
PALAESTRA_FIX
