#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/lowest_common_ancestors.py
+++ b/networkx/algorithms/lowest_common_ancestors.py
@@ -90,7 +90,7 @@
                 ancestor_cache[v] = nx.ancestors(G, v)
                 ancestor_cache[v].add(v)
             if w not in ancestor_cache:
-                ancestor_cache[w] = nx.ancestors(w, G)
+                ancestor_cache[w] = nx.ancestors(G, w)
                 ancestor_cache[w].add(w)
 
             common_ancestors = ancestor_cache[v] & ancestor_cache[w]
PALAESTRA_FIX
