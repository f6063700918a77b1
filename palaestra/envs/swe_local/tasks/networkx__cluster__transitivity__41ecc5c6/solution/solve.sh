#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/cluster.py
+++ b/networkx/algorithms/cluster.py
@@ -419,7 +419,7 @@
     1.0
     """
     triangles_contri = [
-        (t, d * (d + 1)) for v, d, t, _ in _triangles_and_degree_iter(G)
+        (t, d * (d - 1)) for v, d, t, _ in _triangles_and_degree_iter(G)
     ]
     # If the graph is empty
     if len(triangles_contri) == 0:
PALAESTRA_FIX
