#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/triads.py
+++ b/networkx/algorithms/triads.py
@@ -435,7 +435,7 @@
     G2 : subgraph
        A randomly selected triad (order-3 NetworkX DiGraph)
     """
-    nodes = sample(list(G.nodes()), 2)
+    nodes = sample(list(G.nodes()), 3)
     G2 = G.subgraph(nodes)
     return G2
 
PALAESTRA_FIX
