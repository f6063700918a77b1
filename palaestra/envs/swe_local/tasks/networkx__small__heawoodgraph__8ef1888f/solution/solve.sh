#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/generators/small.py
+++ b/networkx/generators/small.py
@@ -516,7 +516,7 @@
     .. [3] https://www.win.tue.nl/~aeb/graphs/Heawood.html
 
     """
-    G = LCF_graph([5, -5], 14, 7, create_using)
+    G = LCF_graph(14, [5, -5], 7, create_using)
     G.name = "Heawood Graph"
     return G
 
PALAESTRA_FIX
