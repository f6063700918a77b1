#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/convert.py
+++ b/networkx/convert.py
@@ -486,6 +486,6 @@
     >>> G = nx.Graph(edgelist)  # use Graph constructor
 
     """
-    G = nx.empty_graph(create_using, 0)
+    G = nx.empty_graph(0, create_using)
     G.add_edges_from(edgelist)
     return G
PALAESTRA_FIX
