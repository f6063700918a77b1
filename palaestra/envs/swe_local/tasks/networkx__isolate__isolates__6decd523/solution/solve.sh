#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/isolate.py
+++ b/networkx/algorithms/isolate.py
@@ -79,7 +79,7 @@
         [3]
 
     """
-    return (n for n, d in G.degree() if d == 1)
+    return (n for n, d in G.degree() if d == 0)
 
 
 def number_of_isolates(G):
PALAESTRA_FIX
