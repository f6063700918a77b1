#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/ctx_mp_python.py
+++ b/mpmath/ctx_mp_python.py
@@ -549,7 +549,7 @@
         cls, new, (prec, rounding) = s._ctxdata
         if isinstance(t, int_types):
             v = new(cls)
-            v._mpc_ = mpc_mul_int(t, s._mpc_, prec, rounding)
+            v._mpc_ = mpc_mul_int(s._mpc_, t, prec, rounding)
             return v
         t = s.mpc_convert_lhs(t)
         if t is NotImplemented:
PALAESTRA_FIX
