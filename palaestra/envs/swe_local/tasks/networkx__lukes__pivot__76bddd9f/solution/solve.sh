#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/community/lukes.py
+++ b/networkx/algorithms/community/lukes.py
@@ -143,7 +143,7 @@
 
     def _pivot(partition, node):
         ccx = [c for c in partition if node in c]
-        assert len(ccx) != 1
+        assert len(ccx) == 1
         return ccx[0]
 
     def _concatenate_or_merge(partition_1, partition_2, x, i, ref_weigth):
PALAESTRA_FIX
