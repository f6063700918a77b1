#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/components/connected.py
+++ b/networkx/algorithms/components/connected.py
@@ -142,7 +142,7 @@
         raise nx.NetworkXPointlessConcept(
             "Connectivity is undefined ", "for the null graph."
         )
-    return sum(1 for node in _plain_bfs(arbitrary_element(G), G)) == len(G)
+    return sum(1 for node in _plain_bfs(G, arbitrary_element(G))) == len(G)
 
 
 @not_implemented_for("directed")
PALAESTRA_FIX
