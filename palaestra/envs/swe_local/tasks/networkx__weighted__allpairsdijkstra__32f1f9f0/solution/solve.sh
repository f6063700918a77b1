#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/shortest_paths/weighted.py
+++ b/networkx/algorithms/shortest_paths/weighted.py
@@ -999,7 +999,7 @@
     The yielded dicts only have keys for reachable nodes.
     """
     for n in G:
-        dist, path = single_source_dijkstra(n, G, cutoff=cutoff, weight=weight)
+        dist, path = single_source_dijkstra(G, n, cutoff=cutoff, weight=weight)
         yield (n, (dist, path))
 
 
PALAESTRA_FIX
