#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/multigraph.py
+++ b/networkx/classes/multigraph.py
@@ -775,7 +775,7 @@
 
         """
         try:
-            if key is not None:
+            if key is None:
                 return v in self._adj[u]
             else:
                 return key in self._adj[u][v]
PALAESTRA_FIX
