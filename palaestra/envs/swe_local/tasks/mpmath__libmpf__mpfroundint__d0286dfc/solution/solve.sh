#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/libmp/libmpf.py
+++ b/mpmath/libmp/libmpf.py
@@ -370,7 +370,7 @@
         return s
     if exp >= 0:
         return s
-    mag = exp-bc
+    mag = exp+bc
     if mag < 1:
         if rnd == round_ceiling:
             if sign: return fzero
PALAESTRA_FIX
