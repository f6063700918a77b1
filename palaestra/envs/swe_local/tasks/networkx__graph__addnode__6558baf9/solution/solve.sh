#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/graph.py
+++ b/networkx/classes/graph.py
@@ -555,7 +555,7 @@
         NetworkX Graphs, though one should be careful that the hash
         doesn't change on mutables.
         """
-        if node_for_adding in self._node:
+        if node_for_adding not in self._node:
             if node_for_adding is None:
                 raise ValueError("None cannot be a node")
             self._adj[node_for_adding] = self.adjlist_inner_dict_factory()
PALAESTRA_FIX
