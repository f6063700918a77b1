#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/operators/all.py
+++ b/networkx/algorithms/operators/all.py
@@ -234,7 +234,7 @@
 
     U = graphs[0]
 
-    if any(G.is_multigraph() == U.is_multigraph() for G in graphs):
+    if any(G.is_multigraph() != U.is_multigraph() for G in graphs):
         raise nx.NetworkXError("All graphs must be graphs or multigraphs.")
 
     # create new graph
PALAESTRA_FIX
