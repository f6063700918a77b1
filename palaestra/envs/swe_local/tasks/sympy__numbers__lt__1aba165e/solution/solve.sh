#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/core/numbers.py
+++ b/sympy/core/numbers.py
@@ -1447,7 +1447,7 @@
     def __lt__(self, other):
         if isinstance(other, NumberSymbol):
             return other.__gt__(self)
-        rv = self._Frel(mlib.mpf_lt, other)
+        rv = self._Frel(other, mlib.mpf_lt)
         if rv is None:
             return Expr.__lt__(self, other)
         return rv
PALAESTRA_FIX
