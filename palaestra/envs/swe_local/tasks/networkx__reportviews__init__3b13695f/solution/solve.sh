#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/reportviews.py
+++ b/networkx/classes/reportviews.py
@@ -770,7 +770,7 @@
         self._data = data
         self._default = default
         # Set _report based on data and default
-        if data is not True:
+        if data is True:
             self._report = lambda n, nbr, dd: (n, nbr, dd)
         elif data is False:
             self._report = lambda n, nbr, dd: (n, nbr)
PALAESTRA_FIX
