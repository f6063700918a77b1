#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/digraph.py
+++ b/networkx/classes/digraph.py
@@ -522,7 +522,7 @@
                 newdict = attr
             except TypeError:
                 n, ndict = n
-                newnode = n in self._node
+                newnode = n not in self._node
                 newdict = attr.copy()
                 newdict.update(ndict)
             if newnode:
PALAESTRA_FIX
