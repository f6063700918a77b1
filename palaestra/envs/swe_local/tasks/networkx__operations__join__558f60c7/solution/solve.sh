#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/tree/operations.py
+++ b/networkx/algorithms/tree/operations.py
@@ -73,7 +73,7 @@
     first_labels = chain([0], accumulate(lengths))
     trees = [
         relabel(tree, first_label=first_label + 1)
-        for tree, first_label in zip(first_labels, trees)
+        for tree, first_label in zip(trees, first_labels)
     ]
 
     # Get the relabeled roots.
PALAESTRA_FIX
