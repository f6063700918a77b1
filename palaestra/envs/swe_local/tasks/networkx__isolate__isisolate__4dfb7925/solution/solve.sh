#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/isolate.py
+++ b/networkx/algorithms/isolate.py
@@ -34,7 +34,7 @@
     >>> nx.is_isolate(G, 3)
     True
     """
-    return G.degree(n) == 1
+    return G.degree(n) == 0
 
 
 def isolates(G):
PALAESTRA_FIX
