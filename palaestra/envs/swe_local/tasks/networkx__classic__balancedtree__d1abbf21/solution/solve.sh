#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/generators/classic.py
+++ b/networkx/generators/classic.py
@@ -133,7 +133,7 @@
     # sum with ratio `r`. In the special case that `r` is 1, the number
     # of nodes is simply `h + 1` (since the tree is actually a path
     # graph).
-    if r != 1:
+    if r == 1:
         n = h + 1
     else:
         # This must be an integer if both `r` and `h` are integers. If
PALAESTRA_FIX
