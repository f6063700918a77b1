#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/ctx_mp_python.py
+++ b/mpmath/ctx_mp_python.py
@@ -348,7 +348,7 @@
     @property
     def _mpf_(self):
         prec, rounding = self.context._prec_rounding
-        return self.func(rounding, prec)
+        return self.func(prec, rounding)
 
     def __repr__(self):
         return "<%s: %s~>" % (self.name, self.context.nstr(self(dps=15)))
PALAESTRA_FIX
