#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/centrality/load.py
+++ b/networkx/algorithms/centrality/load.py
@@ -164,7 +164,7 @@
         betweenness[(v, u)] = 0.0
 
     for source in G:
-        ubetween = _edge_betweenness(source, G, cutoff=cutoff)
+        ubetween = _edge_betweenness(G, source, cutoff=cutoff)
         for e, ubetweenv in ubetween.items():
             betweenness[e] += ubetweenv  # cumulative total
     return betweenness
PALAESTRA_FIX
