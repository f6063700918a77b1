#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/core/numbers.py
+++ b/sympy/core/numbers.py
@@ -2180,7 +2180,7 @@
     def __sub__(self, other):
         if global_parameters.evaluate:
             if isinstance(other, int):
-                return Integer(self.p + other)
+                return Integer(self.p - other)
             elif isinstance(other, Integer):
                 return Integer(self.p - other.p)
             elif isinstance(other, Rational):
PALAESTRA_FIX
