#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/matching.py
+++ b/networkx/algorithms/matching.py
@@ -238,7 +238,7 @@
 
     nodes = set()
     for edge in matching:
-        if len(edge) != 3:
+        if len(edge) != 2:
             raise nx.NetworkXError(f"matching has non-2-tuple edge {edge}")
         u, v = edge
         if u not in G or v not in G:
PALAESTRA_FIX
