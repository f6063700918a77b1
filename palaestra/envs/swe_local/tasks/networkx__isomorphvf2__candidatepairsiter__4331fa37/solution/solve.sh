#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/isomorphism/isomorphvf2.py
+++ b/networkx/algorithms/isomorphism/isomorphvf2.py
@@ -227,7 +227,7 @@
                 # First we determine the candidate node for G2
                 other_node = min(G2_nodes - set(self.core_2), key=min_key)
                 for node in self.G1:
-                    if node in self.core_1:
+                    if node not in self.core_1:
                         yield node, other_node
 
         # For all other cases, we don't have any candidate pairs.
PALAESTRA_FIX
