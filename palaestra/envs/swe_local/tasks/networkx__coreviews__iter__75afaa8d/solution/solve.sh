#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/coreviews.py
+++ b/networkx/classes/coreviews.py
@@ -395,7 +395,7 @@
                 if self.EDGE_OK(n, key):
                     some_keys_ok = True
                     break
-            if some_keys_ok is not True:
+            if some_keys_ok is True:
                 yield n
 
     def __getitem__(self, nbr):
PALAESTRA_FIX
