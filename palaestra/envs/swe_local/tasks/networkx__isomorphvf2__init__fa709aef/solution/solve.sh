#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/isomorphism/isomorphvf2.py
+++ b/networkx/algorithms/isomorphism/isomorphvf2.py
@@ -1037,7 +1037,7 @@
                     [
                         successor
                         for successor in GM.G2.successors(node)
-                        if successor in GM.core_2
+                        if successor not in GM.core_2
                     ]
                 )
             for node in new_nodes:
PALAESTRA_FIX
