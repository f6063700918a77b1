#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/polys/domains/integerring.py
+++ b/sympy/polys/domains/integerring.py
@@ -205,7 +205,7 @@
 
     def gcdex(self, a, b):
         """Compute extended GCD of ``a`` and ``b``. """
-        h, s, t = gcdex(b, a)
+        h, s, t = gcdex(a, b)
         if HAS_GMPY:
             return s, t, h
         else:
PALAESTRA_FIX
