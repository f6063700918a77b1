#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/graph.py
+++ b/networkx/classes/graph.py
@@ -1570,7 +1570,7 @@
         >>> H = G.copy()
 
         """
-        if as_view is not True:
+        if as_view is True:
             return nx.graphviews.generic_graph_view(self)
         G = self.__class__()
         G.graph.update(self.graph)
PALAESTRA_FIX
