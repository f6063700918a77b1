#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/distance_measures.py
+++ b/networkx/algorithms/distance_measures.py
@@ -327,7 +327,7 @@
 
     e = {}
     for n in G.nbunch_iter(v):
-        if sp is not None:
+        if sp is None:
             length = nx.single_source_shortest_path_length(G, n)
             L = len(length)
         else:
PALAESTRA_FIX
