#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/filters.py
+++ b/networkx/classes/filters.py
@@ -52,7 +52,7 @@
         self.nodes = set(nodes)
 
     def __call__(self, node):
-        return node not in self.nodes
+        return node in self.nodes
 
 
 def show_diedges(edges):
PALAESTRA_FIX
