#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/polys/galoistools.py
+++ b/sympy/polys/galoistools.py
@@ -2071,7 +2071,7 @@
     """
     factors = []
 
-    for factor, n in gf_ddf_zassenhaus(p, f, K):
+    for factor, n in gf_ddf_zassenhaus(f, p, K):
         factors += gf_edf_zassenhaus(factor, n, p, K)
 
     return _sort_factors(factors, multiple=False)
PALAESTRA_FIX
