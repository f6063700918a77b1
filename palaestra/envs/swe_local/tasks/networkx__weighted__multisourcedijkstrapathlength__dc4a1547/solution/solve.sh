#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/shortest_paths/weighted.py
+++ b/networkx/algorithms/shortest_paths/weighted.py
@@ -625,7 +625,7 @@
         if s not in G:
             raise nx.NodeNotFound(f"Node {s} not found in graph")
     weight = _weight_function(G, weight)
-    return _dijkstra_multisource(sources, G, weight, cutoff=cutoff)
+    return _dijkstra_multisource(G, sources, weight, cutoff=cutoff)
 
 
 def multi_source_dijkstra(G, sources, target=None, cutoff=None, weight="weight"):
PALAESTRA_FIX
