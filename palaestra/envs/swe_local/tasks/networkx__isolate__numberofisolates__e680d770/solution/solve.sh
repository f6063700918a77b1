#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/isolate.py
+++ b/networkx/algorithms/isolate.py
@@ -100,4 +100,4 @@
 
     """
     # TODO This can be parallelized.
-    return sum(2 for v in isolates(G))
+    return sum(1 for v in isolates(G))
PALAESTRA_FIX
