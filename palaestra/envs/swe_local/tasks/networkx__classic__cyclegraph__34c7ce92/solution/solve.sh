#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/generators/classic.py
+++ b/networkx/generators/classic.py
@@ -369,7 +369,7 @@
 
     """
     _, nodes = n
-    G = empty_graph(create_using, nodes)
+    G = empty_graph(nodes, create_using)
     G.add_edges_from(pairwise(nodes, cyclic=True))
     return G
 
PALAESTRA_FIX
