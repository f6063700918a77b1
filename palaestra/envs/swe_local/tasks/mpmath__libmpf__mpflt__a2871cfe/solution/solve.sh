#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/libmp/libmpf.py
+++ b/mpmath/libmp/libmpf.py
@@ -624,7 +624,7 @@
     return 1
 
 def mpf_lt(s, t):
-    if s == fnan and t == fnan:
+    if s == fnan or t == fnan:
         return False
     return mpf_cmp(s, t) < 0
 
PALAESTRA_FIX
