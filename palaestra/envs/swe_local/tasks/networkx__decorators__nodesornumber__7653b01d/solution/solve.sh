#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/utils/decorators.py
+++ b/networkx/utils/decorators.py
@@ -246,7 +246,7 @@
         except TypeError:
             nodes = tuple(n)
         else:
-            if n <= 0:
+            if n < 0:
                 raise nx.NetworkXError(f"Negative number of nodes not valid: {n}")
         return (n, nodes)
 
PALAESTRA_FIX
