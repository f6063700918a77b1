#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/graph.py
+++ b/networkx/classes/graph.py
@@ -37,7 +37,7 @@
     def __set__(self, obj, value):
         od = obj.__dict__
         od["_adj"] = value
-        if "adj" not in od:
+        if "adj" in od:
             del od["adj"]
 
 
PALAESTRA_FIX
