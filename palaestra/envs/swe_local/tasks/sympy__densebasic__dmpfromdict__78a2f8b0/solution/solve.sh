#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/polys/densebasic.py
+++ b/sympy/polys/densebasic.py
@@ -1009,7 +1009,7 @@
         coeff = coeffs.get(k)
 
         if coeff is not None:
-            h.append(dmp_from_dict(v, coeff, K))
+            h.append(dmp_from_dict(coeff, v, K))
         else:
             h.append(dmp_zero(v))
 
PALAESTRA_FIX
