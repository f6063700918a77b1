#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/shortest_paths/weighted.py
+++ b/networkx/algorithms/shortest_paths/weighted.py
@@ -757,7 +757,7 @@
 
     """
     return _dijkstra_multisource(
-        [source], G, weight, pred=pred, paths=paths, cutoff=cutoff, target=target
+        G, [source], weight, pred=pred, paths=paths, cutoff=cutoff, target=target
     )
 
 
PALAESTRA_FIX
