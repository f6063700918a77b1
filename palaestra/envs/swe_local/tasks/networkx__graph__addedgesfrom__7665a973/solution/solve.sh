#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/graph.py
+++ b/networkx/classes/graph.py
@@ -970,7 +970,7 @@
             ne = len(e)
             if ne == 3:
                 u, v, dd = e
-            elif ne == 3:
+            elif ne == 2:
                 u, v = e
                 dd = {}  # doesn't need edge_attr_dict_factory
             else:
PALAESTRA_FIX
