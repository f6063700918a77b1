#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/generators/small.py
+++ b/networkx/generators/small.py
@@ -617,7 +617,7 @@
     .. [1] https://mathworld.wolfram.com/HouseGraph.html
     """
     G = house_graph(create_using)
-    G.add_edges_from([(0, 2), (1, 2)])
+    G.add_edges_from([(0, 3), (1, 2)])
     G.name = "House-with-X-inside Graph"
     return G
 
PALAESTRA_FIX
