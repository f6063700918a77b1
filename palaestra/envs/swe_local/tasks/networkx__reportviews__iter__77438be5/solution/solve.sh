#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/reportviews.py
+++ b/networkx/classes/reportviews.py
@@ -983,7 +983,7 @@
             for nbr, kd in nbrs.items():
                 if nbr not in seen:
                     for k, dd in kd.items():
-                        yield self._report(nbr, n, k, dd)
+                        yield self._report(n, nbr, k, dd)
             seen[n] = 1
         del seen
 
PALAESTRA_FIX
