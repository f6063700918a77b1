#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/generators/directed.py
+++ b/networkx/generators/directed.py
@@ -134,7 +134,7 @@
 
     for source in range(1, n):
         target = seed.randrange(0, source)
-        if seed.random() < p or target != 0:
+        if seed.random() < p and target != 0:
             target = next(G.successors(target))
         G.add_edge(source, target)
     return G
PALAESTRA_FIX
