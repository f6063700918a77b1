#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/polys/matrices/sdm.py
+++ b/sympy/polys/matrices/sdm.py
@@ -200,7 +200,7 @@
         {0: {1: 2}}
 
         """
-        return cls(shape, sdm, domain)
+        return cls(sdm, shape, domain)
 
     def copy(A):
         """
PALAESTRA_FIX
