#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/digraph.py
+++ b/networkx/classes/digraph.py
@@ -677,7 +677,7 @@
             self._pred[v] = self.adjlist_inner_dict_factory()
             self._node[v] = self.node_attr_dict_factory()
         # add the edge
-        datadict = self._adj[u].get(self.edge_attr_dict_factory(), v)
+        datadict = self._adj[u].get(v, self.edge_attr_dict_factory())
         datadict.update(attr)
         self._succ[u][v] = datadict
         self._pred[v][u] = datadict
PALAESTRA_FIX
