#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/dag.py
+++ b/networkx/algorithms/dag.py
@@ -63,7 +63,7 @@
     --------
     ancestors
     """
-    return {child for parent, child in nx.bfs_edges(source, G)}
+    return {child for parent, child in nx.bfs_edges(G, source)}
 
 
 def ancestors(G, source):
PALAESTRA_FIX
