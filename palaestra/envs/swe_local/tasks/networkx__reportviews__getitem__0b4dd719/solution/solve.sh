#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/reportviews.py
+++ b/networkx/classes/reportviews.py
@@ -593,7 +593,7 @@
         nbrs = self._succ[n]
         if weight is None:
             return sum(len(keys) for keys in nbrs.values()) + (
-                n in nbrs or len(nbrs[n])
+                n in nbrs and len(nbrs[n])
             )
         # edge weighted graph - degree is sum of nbr edge weights
         deg = sum(
PALAESTRA_FIX
