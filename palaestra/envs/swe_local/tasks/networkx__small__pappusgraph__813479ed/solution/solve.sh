#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/generators/small.py
+++ b/networkx/generators/small.py
@@ -794,7 +794,7 @@
     ----------
     .. [1] https://en.wikipedia.org/wiki/Pappus_graph
     """
-    G = LCF_graph([5, 7, -7, 7, -7, -5], 18, 3)
+    G = LCF_graph(18, [5, 7, -7, 7, -7, -5], 3)
     G.name = "Pappus Graph"
     return G
 
PALAESTRA_FIX
