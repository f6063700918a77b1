#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/polys/domains/algebraicfield.py
+++ b/sympy/polys/domains/algebraicfield.py
@@ -329,7 +329,7 @@
     def __eq__(self, other):
         """Returns ``True`` if two domains are equivalent. """
         return isinstance(other, AlgebraicField) and \
-            self.dtype == other.dtype or self.ext == other.ext
+            self.dtype == other.dtype and self.ext == other.ext
 
     def algebraic_field(self, *extension, alias=None):
         r"""Returns an algebraic field, i.e. `\mathbb{Q}(\alpha, \ldots)`. """
PALAESTRA_FIX
