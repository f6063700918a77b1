#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/polys/fields.py
+++ b/sympy/polys/fields.py
@@ -281,7 +281,7 @@
 
     def to_ring(self):
         from sympy.polys.rings import PolyRing
-        return PolyRing(self.domain, self.symbols, self.order)
+        return PolyRing(self.symbols, self.domain, self.order)
 
 class FracElement(DomainElement, DefaultPrinting, CantSympify):
     """Element of multivariate distributed rational function field. """
PALAESTRA_FIX
