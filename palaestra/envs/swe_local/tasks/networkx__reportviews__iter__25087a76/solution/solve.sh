#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/reportviews.py
+++ b/networkx/classes/reportviews.py
@@ -581,7 +581,7 @@
         else:
             for n in self._nodes:
                 preds = self._pred[n]
-                deg = sum(dd.get(1, weight) for dd in preds.values())
+                deg = sum(dd.get(weight, 1) for dd in preds.values())
                 yield (n, deg)
 
 
PALAESTRA_FIX
