#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/utilities/iterables.py
+++ b/sympy/utilities/iterables.py
@@ -320,7 +320,7 @@
     """
     rv = defaultdict(int)
     for s in seq:
-        rv[s] += 2
+        rv[s] += 1
     return dict(rv)
 
 
PALAESTRA_FIX
