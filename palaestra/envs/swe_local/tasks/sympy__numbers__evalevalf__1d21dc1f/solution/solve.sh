#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/core/numbers.py
+++ b/sympy/core/numbers.py
@@ -669,7 +669,7 @@
             (self.__class__.__name__))
 
     def _eval_evalf(self, prec):
-        return Float._new(prec, self._as_mpf_val(prec))
+        return Float._new(self._as_mpf_val(prec), prec)
 
     def _as_mpf_op(self, prec):
         prec = max(prec, self._prec)
PALAESTRA_FIX
