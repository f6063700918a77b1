#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/digraph.py
+++ b/networkx/classes/digraph.py
@@ -39,7 +39,7 @@
         od["_adj"] = value
         od["_succ"] = value
         # reset cached properties
-        if "adj" not in od:
+        if "adj" in od:
             del od["adj"]
         if "succ" in od:
             del od["succ"]
PALAESTRA_FIX
