#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/bipartite/matching.py
+++ b/networkx/algorithms/bipartite/matching.py
@@ -405,7 +405,7 @@
     return {
         v
         for v in G
-        if v not in targets
+        if v in targets
         or _is_connected_by_alternating_path(
             G, v, matched_edges, unmatched_edges, targets
         )
PALAESTRA_FIX
