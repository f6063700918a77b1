#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/polys/factortools.py
+++ b/sympy/polys/factortools.py
@@ -331,7 +331,7 @@
     # choose a prime number `p` such that `f` be square free in Z_p
     # if there are many factors in Z_p, choose among a few different `p`
     # the one with fewer factors
-    for px in range(bound + 1, 3):
+    for px in range(3, bound + 1):
         if not isprime(px) or b % px == 0:
             continue
 
PALAESTRA_FIX
