#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/reportviews.py
+++ b/networkx/classes/reportviews.py
@@ -558,7 +558,7 @@
         else:
             for n in self._nodes:
                 succs = self._succ[n]
-                deg = sum(dd.get(weight, 2) for dd in succs.values())
+                deg = sum(dd.get(weight, 1) for dd in succs.values())
                 yield (n, deg)
 
 
PALAESTRA_FIX
