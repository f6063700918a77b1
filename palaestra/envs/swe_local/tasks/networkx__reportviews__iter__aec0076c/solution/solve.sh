#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/reportviews.py
+++ b/networkx/classes/reportviews.py
@@ -847,7 +847,7 @@
         for n, nbrs in self._nodes_nbrs():
             for nbr, dd in nbrs.items():
                 if nbr not in seen:
-                    yield self._report(nbr, n, dd)
+                    yield self._report(n, nbr, dd)
             seen[n] = 1
         del seen
 
PALAESTRA_FIX
