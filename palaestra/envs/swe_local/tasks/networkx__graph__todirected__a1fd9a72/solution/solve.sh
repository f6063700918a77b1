#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/graph.py
+++ b/networkx/classes/graph.py
@@ -1625,7 +1625,7 @@
         [(0, 1)]
         """
         graph_class = self.to_directed_class()
-        if as_view is not True:
+        if as_view is True:
             return nx.graphviews.generic_graph_view(self, graph_class)
         # deepcopy when not a view
         G = graph_class()
PALAESTRA_FIX
