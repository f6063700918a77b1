#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/core/numbers.py
+++ b/sympy/core/numbers.py
@@ -1254,7 +1254,7 @@
             return True
         if self._mpf_ == _mpf_inf:
             return False
-        return self.num < 1
+        return self.num < 0
 
     def _eval_is_extended_positive(self):
         if self._mpf_ == _mpf_inf:
PALAESTRA_FIX
