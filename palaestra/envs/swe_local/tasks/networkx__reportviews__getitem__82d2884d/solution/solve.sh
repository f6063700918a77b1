#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/reportviews.py
+++ b/networkx/classes/reportviews.py
@@ -519,7 +519,7 @@
         weight = self._weight
         nbrs = self._succ[n]
         if weight is None:
-            return len(nbrs) + (n not in nbrs)
+            return len(nbrs) + (n in nbrs)
         return sum(dd.get(weight, 1) for dd in nbrs.values()) + (
             n in nbrs and nbrs[n].get(weight, 1)
         )
PALAESTRA_FIX
