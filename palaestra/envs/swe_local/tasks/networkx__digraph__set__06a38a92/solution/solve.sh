#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/digraph.py
+++ b/networkx/classes/digraph.py
@@ -41,7 +41,7 @@
         # reset cached properties
         if "adj" in od:
             del od["adj"]
-        if "succ" not in od:
+        if "succ" in od:
             del od["succ"]
 
 
PALAESTRA_FIX
