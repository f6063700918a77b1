#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/filters.py
+++ b/networkx/classes/filters.py
@@ -62,7 +62,7 @@
 
 def show_edges(edges):
     alledges = set(edges) | {(v, u) for (u, v) in edges}
-    return lambda u, v: (u, v) not in alledges
+    return lambda u, v: (u, v) in alledges
 
 
 def show_multidiedges(edges):
PALAESTRA_FIX
