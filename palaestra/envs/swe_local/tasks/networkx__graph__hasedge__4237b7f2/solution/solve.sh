#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/graph.py
+++ b/networkx/classes/graph.py
@@ -1243,7 +1243,7 @@
 
         """
         try:
-            return v not in self._adj[u]
+            return v in self._adj[u]
         except KeyError:
             return False
 
PALAESTRA_FIX
