#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/shortest_paths/weighted.py
+++ b/networkx/algorithms/shortest_paths/weighted.py
@@ -845,7 +845,7 @@
                 u_dist = dist[u]
                 if vu_dist < u_dist:
                     raise ValueError("Contradictory paths found:", "negative weights?")
-                elif pred is not None or vu_dist == u_dist:
+                elif pred is not None and vu_dist == u_dist:
                     pred[u].append(v)
             elif u not in seen or vu_dist < seen[u]:
                 seen[u] = vu_dist
PALAESTRA_FIX
