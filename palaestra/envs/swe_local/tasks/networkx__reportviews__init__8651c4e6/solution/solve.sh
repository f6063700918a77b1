#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/reportviews.py
+++ b/networkx/classes/reportviews.py
@@ -772,7 +772,7 @@
         # Set _report based on data and default
         if data is True:
             self._report = lambda n, nbr, dd: (n, nbr, dd)
-        elif data is not False:
+        elif data is False:
             self._report = lambda n, nbr, dd: (n, nbr)
         else:  # data is attribute name
             self._report = (
PALAESTRA_FIX
