#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/approximation/connectivity.py
+++ b/networkx/algorithms/approximation/connectivity.py
@@ -282,7 +282,7 @@
 
     all_pairs = {n: {} for n in nbunch}
 
-    for u, v in iter_func(nbunch, 3):
+    for u, v in iter_func(nbunch, 2):
         k = local_node_connectivity(G, u, v, cutoff=cutoff)
         all_pairs[u][v] = k
         if not directed:
PALAESTRA_FIX
