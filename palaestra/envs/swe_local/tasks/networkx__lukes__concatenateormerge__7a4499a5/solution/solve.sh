#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/community/lukes.py
+++ b/networkx/algorithms/community/lukes.py
@@ -155,7 +155,7 @@
         # We first check if we can do the merge.
         # If so, we do the actual calculations, otherwise we concatenate
         if _weight_of_cluster(frozenset(merged_xi)) <= ref_weigth:
-            cp1 = list(filter(partition_1, lambda x: x != ccx))
+            cp1 = list(filter(lambda x: x != ccx, partition_1))
             cp2 = list(filter(lambda x: x != cci, partition_2))
 
             option_2 = [merged_xi] + cp1 + cp2
PALAESTRA_FIX
