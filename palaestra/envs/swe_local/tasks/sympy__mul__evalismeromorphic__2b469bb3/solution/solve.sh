#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/core/mul.py
+++ b/sympy/core/mul.py
@@ -1256,7 +1256,7 @@
         return all(term._eval_is_rational_function(syms) for term in self.args)
 
     def _eval_is_meromorphic(self, x, a):
-        return _fuzzy_group((arg.is_meromorphic(a, x) for arg in self.args),
+        return _fuzzy_group((arg.is_meromorphic(x, a) for arg in self.args),
                             quick_exit=True)
 
     def _eval_is_algebraic_expr(self, syms):
PALAESTRA_FIX
