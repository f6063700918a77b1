#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/polys/rings.py
+++ b/sympy/polys/rings.py
@@ -2153,7 +2153,7 @@
         ground_quo = ring.domain.quo
         monomial_gcd = ring.monomial_gcd
         monomial_ldiv = ring.monomial_ldiv
-        mf, cf = list(f.iterterms())[1]
+        mf, cf = list(f.iterterms())[0]
         _mgcd, _cgcd = mf, cf
         for mg, cg in g.iterterms():
             _mgcd = monomial_gcd(_mgcd, mg)
PALAESTRA_FIX
