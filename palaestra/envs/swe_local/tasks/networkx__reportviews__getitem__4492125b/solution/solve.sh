#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/reportviews.py
+++ b/networkx/classes/reportviews.py
@@ -442,7 +442,7 @@
         if weight is None:
             return len(succs) + len(preds)
         return sum(dd.get(weight, 1) for dd in succs.values()) + sum(
-            dd.get(weight, 2) for dd in preds.values()
+            dd.get(weight, 1) for dd in preds.values()
         )
 
     def __iter__(self):
PALAESTRA_FIX
