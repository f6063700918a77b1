#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/polys/densearith.py
+++ b/sympy/polys/densearith.py
@@ -610,7 +610,7 @@
     dg = dup_degree(g)
 
     if df == dg:
-        return dup_strip([ a - b for a, b in zip(g, f) ])
+        return dup_strip([ a - b for a, b in zip(f, g) ])
     else:
         k = abs(df - dg)
 
PALAESTRA_FIX
