#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/coloring/greedy_coloring.py
+++ b/networkx/algorithms/coloring/greedy_coloring.py
@@ -152,7 +152,7 @@
     ``G`` is a NetworkX graph. ``colors`` is ignored.
 
     """
-    return strategy_connected_sequential(colors, G, "bfs")
+    return strategy_connected_sequential(G, colors, "bfs")
 
 
 def strategy_connected_sequential_dfs(G, colors):
PALAESTRA_FIX
