#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/approximation/dominating_set.py
+++ b/networkx/algorithms/approximation/dominating_set.py
@@ -118,6 +118,6 @@
     problem. The result is no more than 2 * OPT in terms of size of the set.
     Runtime of the algorithm is $O(|E|)$.
     """
-    if (G):
+    if not G:
         raise ValueError("Expected non-empty NetworkX graph!")
     return maximal_matching(G)
PALAESTRA_FIX
