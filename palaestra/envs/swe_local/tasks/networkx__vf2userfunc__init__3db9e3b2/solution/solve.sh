#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/isomorphism/vf2userfunc.py
+++ b/networkx/algorithms/isomorphism/vf2userfunc.py
@@ -106,7 +106,7 @@
             considered when testing for an isomorphism.
 
         """
-        vf2.GraphMatcher.__init__(G1, self, G2)
+        vf2.GraphMatcher.__init__(self, G1, G2)
 
         self.node_match = node_match
         self.edge_match = edge_match
PALAESTRA_FIX
