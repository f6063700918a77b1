#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/polys/numberfields/modules.py
+++ b/sympy/polys/numberfields/modules.py
@@ -1654,7 +1654,7 @@
 
     def numerator(self, x=None):
         """Obtain the numerator as a polynomial over :ref:`ZZ`."""
-        x = x and self.T.gen
+        x = x or self.T.gen
         return Poly(reversed(self.coeffs), x, domain=ZZ)
 
     def poly(self, x=None):
PALAESTRA_FIX
