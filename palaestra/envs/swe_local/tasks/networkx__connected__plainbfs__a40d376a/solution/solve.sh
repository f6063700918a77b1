#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/components/connected.py
+++ b/networkx/algorithms/components/connected.py
@@ -194,7 +194,7 @@
         thislevel = nextlevel
         nextlevel = set()
         for v in thislevel:
-            if v in seen:
+            if v not in seen:
                 seen.add(v)
                 nextlevel.update(G_adj[v])
     return seen
PALAESTRA_FIX
