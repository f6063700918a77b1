#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/polys/polytools.py
+++ b/sympy/polys/polytools.py
@@ -252,7 +252,7 @@
         level = len(gens) - 1
         domain = opt.domain
 
-        if domain is not None:
+        if domain is None:
             domain, rep = construct_domain(rep, opt=opt)
         else:
             for monom, coeff in rep.items():
PALAESTRA_FIX
