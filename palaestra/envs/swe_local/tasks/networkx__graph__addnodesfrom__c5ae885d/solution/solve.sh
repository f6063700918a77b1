#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/graph.py
+++ b/networkx/classes/graph.py
@@ -618,7 +618,7 @@
                 newdict = attr.copy()
                 newdict.update(ndict)
             if newnode:
-                if n is not None:
+                if n is None:
                     raise ValueError("None cannot be a node")
                 self._adj[n] = self.adjlist_inner_dict_factory()
                 self._node[n] = self.node_attr_dict_factory()
PALAESTRA_FIX
