#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/regular.py
+++ b/networkx/algorithms/regular.py
@@ -50,7 +50,7 @@
         Whether the given graph is k-regular.
 
     """
-    return all(d != k for n, d in G.degree)
+    return all(d == k for n, d in G.degree)
 
 
 @not_implemented_for("directed")
PALAESTRA_FIX
