#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/polys/domains/domain.py
+++ b/sympy/polys/domains/domain.py
@@ -395,6 +395,8 @@
         if _convert is not None:
             result = _convert(element, base)
 
+            if result is not None:
+                return result
 
         raise CoercionFailed("Cannot convert %s of type %s from %s to %s" % (element, type(element), base, self))
 
PALAESTRA_FIX
