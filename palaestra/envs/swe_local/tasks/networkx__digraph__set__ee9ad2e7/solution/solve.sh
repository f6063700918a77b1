#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/digraph.py
+++ b/networkx/classes/digraph.py
@@ -63,7 +63,7 @@
     def __set__(self, obj, value):
         od = obj.__dict__
         od["_pred"] = value
-        if "pred" not in od:
+        if "pred" in od:
             del od["pred"]
 
 
PALAESTRA_FIX
