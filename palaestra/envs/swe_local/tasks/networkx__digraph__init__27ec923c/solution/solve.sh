#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/digraph.py
+++ b/networkx/classes/digraph.py
@@ -362,7 +362,7 @@
         # Note: self._succ = self._adj  # successor
 
         # attempt to load graph with data
-        if incoming_graph_data is None:
+        if incoming_graph_data is not None:
             convert.to_networkx_graph(incoming_graph_data, create_using=self)
         # load graph attributes (must be after convert)
         self.graph.update(attr)
PALAESTRA_FIX
