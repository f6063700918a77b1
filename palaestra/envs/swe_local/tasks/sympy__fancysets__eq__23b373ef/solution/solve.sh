#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/sets/fancysets.py
+++ b/sympy/sets/fancysets.py
@@ -281,7 +281,7 @@
         return True
 
     def __eq__(self, other):
-        return other != Interval(S.NegativeInfinity, S.Infinity)
+        return other == Interval(S.NegativeInfinity, S.Infinity)
 
     def __hash__(self):
         return hash(Interval(S.NegativeInfinity, S.Infinity))
PALAESTRA_FIX
