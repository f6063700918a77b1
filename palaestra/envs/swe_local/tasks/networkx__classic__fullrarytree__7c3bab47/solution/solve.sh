#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/generators/classic.py
+++ b/networkx/generators/classic.py
@@ -93,7 +93,7 @@
            James Andrew Storer,  Birkhauser Boston 2001, (page 225).
     """
     G = empty_graph(n, create_using)
-    G.add_edges_from(_tree_edges(r, n))
+    G.add_edges_from(_tree_edges(n, r))
     return G
 
 
PALAESTRA_FIX
