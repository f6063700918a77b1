#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/utils/decorators.py
+++ b/networkx/utils/decorators.py
@@ -1241,7 +1241,7 @@
                     raise ValueError("A cycle was found in nestlist.  Be a tree.")
                 else:
                     visited.add(id(thing))
-                yield from argmap._flatten(visited, thing)
+                yield from argmap._flatten(thing, visited)
             else:
                 yield thing
 
PALAESTRA_FIX
