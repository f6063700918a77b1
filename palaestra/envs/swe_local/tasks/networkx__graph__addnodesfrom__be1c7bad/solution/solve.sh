#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/graph.py
+++ b/networkx/classes/graph.py
@@ -610,7 +610,7 @@
         """
         for n in nodes_for_adding:
             try:
-                newnode = n in self._node
+                newnode = n not in self._node
                 newdict = attr
             except TypeError:
                 n, ndict = n
PALAESTRA_FIX
