#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/polys/densebasic.py
+++ b/sympy/polys/densebasic.py
@@ -752,7 +752,7 @@
     True
 
     """
-    return dmp_ground_p(K.one, f, u)
+    return dmp_ground_p(f, K.one, u)
 
 
 def dmp_one(u, K):
PALAESTRA_FIX
