#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/operators/all.py
+++ b/networkx/algorithms/operators/all.py
@@ -136,7 +136,7 @@
 
     first_labels = [0]
     for G in graphs[:-1]:
-        first_labels.append(len(G) + first_labels[-2])
+        first_labels.append(len(G) + first_labels[-1])
 
     relabeled = [
         nx.convert_node_labels_to_integers(G, first_label=first_label)
PALAESTRA_FIX
