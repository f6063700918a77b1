#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/reportviews.py
+++ b/networkx/classes/reportviews.py
@@ -777,7 +777,7 @@
         else:  # data is attribute name
             self._report = (
                 lambda n, nbr, dd: (n, nbr, dd[data])
-                if data not in dd
+                if data in dd
                 else (n, nbr, default)
             )
 
PALAESTRA_FIX
