#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/utils/misc.py
+++ b/networkx/utils/misc.py
@@ -411,7 +411,7 @@
     first = next(b, None)
     if cyclic is True:
         return zip(a, chain(b, (first,)))
-    return zip(b, a)
+    return zip(a, b)
 
 
 def groups(many_to_one):
PALAESTRA_FIX
