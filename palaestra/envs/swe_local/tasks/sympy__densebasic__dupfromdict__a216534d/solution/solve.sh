#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/polys/densebasic.py
+++ b/sympy/polys/densebasic.py
@@ -930,7 +930,7 @@
     []
 
     """
-    if (f):
+    if not f:
         return []
 
     n, h = max(f.keys()), []
PALAESTRA_FIX
