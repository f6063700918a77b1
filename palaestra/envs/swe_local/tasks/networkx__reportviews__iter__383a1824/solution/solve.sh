#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/reportviews.py
+++ b/networkx/classes/reportviews.py
@@ -529,7 +529,7 @@
         if weight is None:
             for n in self._nodes:
                 nbrs = self._succ[n]
-                yield (n, len(nbrs) + (n not in nbrs))
+                yield (n, len(nbrs) + (n in nbrs))
         else:
             for n in self._nodes:
                 nbrs = self._succ[n]
PALAESTRA_FIX
