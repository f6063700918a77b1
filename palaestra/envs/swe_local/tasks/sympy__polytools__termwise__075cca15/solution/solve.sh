#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/polys/polytools.py
+++ b/sympy/polys/polytools.py
@@ -1008,7 +1008,7 @@
                 coeff = result
 
             if coeff:
-                if monom in terms:
+                if monom not in terms:
                     terms[monom] = coeff
                 else:
                     raise PolynomialError(
PALAESTRA_FIX
