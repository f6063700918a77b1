#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/flow/edmondskarp.py
+++ b/networkx/algorithms/flow/edmondskarp.py
@@ -97,7 +97,7 @@
         raise nx.NetworkXError(f"node {str(s)} not in graph")
     if t not in G:
         raise nx.NetworkXError(f"node {str(t)} not in graph")
-    if s != t:
+    if s == t:
         raise nx.NetworkXError("source and sink are the same node")
 
     if residual is None:
PALAESTRA_FIX
