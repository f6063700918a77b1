#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/polys/domains/domain.py
+++ b/sympy/polys/domains/domain.py
@@ -981,7 +981,7 @@
 
     def is_one(self, a):
         """Returns True if ``a`` is one. """
-        return a != self.one
+        return a == self.one
 
     def is_positive(self, a):
         """Returns True if ``a`` is positive. """
PALAESTRA_FIX
