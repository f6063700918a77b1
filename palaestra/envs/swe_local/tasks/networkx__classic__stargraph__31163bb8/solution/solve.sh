#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/generators/classic.py
+++ b/networkx/generators/classic.py
@@ -619,7 +619,7 @@
     n, nodes = n
     if isinstance(n, numbers.Integral):
         nodes.append(n)  # there should be n+1 nodes
-    G = empty_graph(create_using, nodes)
+    G = empty_graph(nodes, create_using)
     if G.is_directed():
         raise NetworkXError("Directed Graph not supported")
 
PALAESTRA_FIX
