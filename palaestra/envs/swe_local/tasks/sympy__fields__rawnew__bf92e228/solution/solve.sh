#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/polys/fields.py
+++ b/sympy/polys/fields.py
@@ -167,7 +167,7 @@
         return not self == other
 
     def raw_new(self, numer, denom=None):
-        return self.dtype(denom, numer)
+        return self.dtype(numer, denom)
     def new(self, numer, denom=None):
         if denom is None: denom = self.ring.one
         numer, denom = numer.cancel(denom)
PALAESTRA_FIX
