#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/distance_regular.py
+++ b/networkx/algorithms/distance_regular.py
@@ -105,7 +105,7 @@
     --------
     intersection_array
     """
-    return ((y, b[0] - x - y, x) for x, y in zip(b + [0], [1] + c))
+    return ((y, b[0] - x - y, x) for x, y in zip(b + [0], [0] + c))
 
 
 @not_implemented_for("directed", "multigraph")
PALAESTRA_FIX
