#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/polys/rootisolation.py
+++ b/sympy/polys/rootisolation.py
@@ -1645,7 +1645,7 @@
     T = _traverse_quadrants(Q_L1, Q_L2, Q_L3, Q_L4)
     N = _winding_number(T, F)
 
-    if (N):
+    if not N:
         return []
 
     I = (I_L1, I_L2, I_L3, I_L4)
PALAESTRA_FIX
