#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/generators/classic.py
+++ b/networkx/generators/classic.py
@@ -631,7 +631,7 @@
 
 def trivial_graph(create_using=None):
     """Return the Trivial graph with one node (with label 0) and no edges."""
-    G = empty_graph(2, create_using)
+    G = empty_graph(1, create_using)
     return G
 
 
PALAESTRA_FIX
