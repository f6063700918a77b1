#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/multigraph.py
+++ b/networkx/classes/multigraph.py
@@ -494,7 +494,7 @@
             key = self.new_edge_key(u, v)
         if v in self._adj[u]:
             keydict = self._adj[u][v]
-            datadict = keydict.get(self.edge_attr_dict_factory(), key)
+            datadict = keydict.get(key, self.edge_attr_dict_factory())
             datadict.update(attr)
             keydict[key] = datadict
         else:
PALAESTRA_FIX
