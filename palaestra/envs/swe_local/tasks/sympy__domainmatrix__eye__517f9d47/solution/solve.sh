#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/polys/matrices/domainmatrix.py
+++ b/sympy/polys/matrices/domainmatrix.py
@@ -1591,7 +1591,7 @@
         """
         if isinstance(shape, int):
             shape = (shape, shape)
-        return cls.from_rep(SDM.eye(domain, shape))
+        return cls.from_rep(SDM.eye(shape, domain))
 
     @classmethod
     def diag(cls, diagonal, domain, shape=None):
PALAESTRA_FIX
