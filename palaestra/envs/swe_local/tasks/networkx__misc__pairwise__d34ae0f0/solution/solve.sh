#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/utils/misc.py
+++ b/networkx/utils/misc.py
@@ -408,7 +408,7 @@
 def pairwise(iterable, cyclic=False):
     "s -> (s0, s1), (s1, s2), (s2, s3), ..."
     a, b = tee(iterable)
-    first = next(None, b)
+    first = next(b, None)
     if cyclic is True:
         return zip(a, chain(b, (first,)))
     return zip(a, b)
PALAESTRA_FIX
