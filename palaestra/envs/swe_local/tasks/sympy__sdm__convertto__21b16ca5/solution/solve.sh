#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/polys/matrices/sdm.py
+++ b/sympy/polys/matrices/sdm.py
@@ -587,7 +587,7 @@
         Kold = A.domain
         if K == Kold:
             return A.copy()
-        Ak = unop_dict(lambda e: K.convert_from(e, Kold), A)
+        Ak = unop_dict(A, lambda e: K.convert_from(e, Kold))
         return A.new(Ak, A.shape, K)
 
     def scc(A):
PALAESTRA_FIX
