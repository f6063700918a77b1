#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/ctx_mp_python.py
+++ b/mpmath/ctx_mp_python.py
@@ -490,7 +490,7 @@
 
     def __mul__(s, t):
         cls, new, (prec, rounding) = s._ctxdata
-        if (hasattr(t, '_mpc_')):
+        if not hasattr(t, '_mpc_'):
             if isinstance(t, int_types):
                 v = new(cls)
                 v._mpc_ = mpc_mul_int(s._mpc_, t, prec, rounding)
PALAESTRA_FIX
