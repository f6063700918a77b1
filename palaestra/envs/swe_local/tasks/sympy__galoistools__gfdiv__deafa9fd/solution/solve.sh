#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/polys/galoistools.py
+++ b/sympy/polys/galoistools.py
@@ -701,6 +701,8 @@
         for j in range(max(0, dg - i), min(df - i, dr) + 1):
             coeff -= h[i + j - dg] * g[dg - j]
 
+        if i <= dq:
+            coeff *= inv
 
         h[i] = coeff % p
 
PALAESTRA_FIX
