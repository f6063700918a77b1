#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/generators/small.py
+++ b/networkx/generators/small.py
@@ -345,7 +345,7 @@
             3: [0, 2, 5],
             4: [0, 5, 7],
             5: [3, 4, 6],
-            6: [2, 4, 7],
+            6: [2, 5, 7],
             7: [1, 4, 6],
         },
         create_using=create_using,
PALAESTRA_FIX
