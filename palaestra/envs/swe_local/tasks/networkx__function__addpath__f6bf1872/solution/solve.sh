#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/function.py
+++ b/networkx/classes/function.py
@@ -288,7 +288,7 @@
     except StopIteration:
         return
     G_to_add_to.add_node(first_node)
-    G_to_add_to.add_edges_from(pairwise(chain(nlist, (first_node,))), **attr)
+    G_to_add_to.add_edges_from(pairwise(chain((first_node,), nlist)), **attr)
 
 
 def add_cycle(G_to_add_to, nodes_for_cycle, **attr):
PALAESTRA_FIX
