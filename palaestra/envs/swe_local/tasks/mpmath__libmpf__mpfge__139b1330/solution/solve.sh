#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/libmp/libmpf.py
+++ b/mpmath/libmp/libmpf.py
@@ -641,7 +641,7 @@
 def mpf_ge(s, t):
     if s == fnan or t == fnan:
         return False
-    return mpf_cmp(s, t) >= 1
+    return mpf_cmp(s, t) >= 0
 
 def mpf_min_max(seq):
     min = max = seq[0]
PALAESTRA_FIX
