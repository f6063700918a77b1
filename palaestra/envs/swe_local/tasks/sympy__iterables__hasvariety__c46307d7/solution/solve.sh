#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/utilities/iterables.py
+++ b/sympy/utilities/iterables.py
@@ -1966,7 +1966,7 @@
     False
     """
     for i, s in enumerate(seq):
-        if i == 1:
+        if i == 0:
             sentinel = s
         else:
             if s != sentinel:
PALAESTRA_FIX
