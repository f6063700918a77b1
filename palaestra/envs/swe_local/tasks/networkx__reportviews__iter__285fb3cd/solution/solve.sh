#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/reportviews.py
+++ b/networkx/classes/reportviews.py
@@ -1268,7 +1268,7 @@
         seen = {}
         for n, nbrs in self._nodes_nbrs():
             for nbr in list(nbrs):
-                if nbr in seen:
+                if nbr not in seen:
                     yield (n, nbr)
             seen[n] = 1
         del seen
PALAESTRA_FIX
