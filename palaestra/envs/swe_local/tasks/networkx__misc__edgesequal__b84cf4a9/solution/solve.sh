#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/utils/misc.py
+++ b/networkx/utils/misc.py
@@ -669,6 +669,8 @@
     for c2, e in enumerate(edges2):
         u, v = e[0], e[1]
         data = [e[2:]]
+        if v in d2[u]:
+            data = d2[u][v] + data
         d2[u][v] = data
         d2[v][u] = data
     if c1 != c2:
PALAESTRA_FIX
