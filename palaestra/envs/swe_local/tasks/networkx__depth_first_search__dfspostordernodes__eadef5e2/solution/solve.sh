#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/traversal/depth_first_search.py
+++ b/networkx/algorithms/traversal/depth_first_search.py
@@ -291,7 +291,7 @@
     bfs_tree
     """
     edges = nx.dfs_labeled_edges(G, source=source, depth_limit=depth_limit)
-    return (v for u, v, d in edges if d != "reverse")
+    return (v for u, v, d in edges if d == "reverse")
 
 
 def dfs_preorder_nodes(G, source=None, depth_limit=None):
PALAESTRA_FIX
