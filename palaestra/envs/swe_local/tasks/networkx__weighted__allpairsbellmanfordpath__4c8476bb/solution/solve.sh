#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/shortest_paths/weighted.py
+++ b/networkx/algorithms/shortest_paths/weighted.py
@@ -1890,7 +1890,7 @@
     path = single_source_bellman_ford_path
     # TODO This can be trivially parallelized.
     for n in G:
-        yield (n, path(n, G, weight=weight))
+        yield (n, path(G, n, weight=weight))
 
 
 def goldberg_radzik(G, source, weight="weight"):
PALAESTRA_FIX
