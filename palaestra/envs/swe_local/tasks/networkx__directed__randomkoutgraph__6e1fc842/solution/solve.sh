#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/generators/directed.py
+++ b/networkx/generators/directed.py
@@ -517,7 +517,7 @@
     G = nx.empty_graph(n, create_using=nx.MultiDiGraph)
     weights = Counter({v: alpha for v in G})
     for i in range(k * n):
-        u = seed.choice([v for v, d in G.out_degree() if d <= k])
+        u = seed.choice([v for v, d in G.out_degree() if d < k])
         # If self-loops are not allowed, make the source node `u` have
         # weight zero.
         if not self_loops:
PALAESTRA_FIX
