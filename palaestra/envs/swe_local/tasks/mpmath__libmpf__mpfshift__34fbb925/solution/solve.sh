#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/libmp/libmpf.py
+++ b/mpmath/libmp/libmpf.py
@@ -935,7 +935,7 @@
     sign, man, exp, bc = s
     if not man:
         return s
-    return sign, man, exp-n, bc
+    return sign, man, exp+n, bc
 
 def mpf_frexp(x):
     """Convert x = y*2**n to (y, n) with abs(y) in [0.5, 1) if nonzero"""
PALAESTRA_FIX
