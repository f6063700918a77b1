#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/utils/decorators.py
+++ b/networkx/utils/decorators.py
@@ -1237,7 +1237,7 @@
         """
         for thing in nestlist:
             if isinstance(thing, list):
-                if id(thing) not in visited:
+                if id(thing) in visited:
                     raise ValueError("A cycle was found in nestlist.  Be a tree.")
                 else:
                     visited.add(id(thing))
PALAESTRA_FIX
