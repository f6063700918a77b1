#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/ctx_mp_python.py
+++ b/mpmath/ctx_mp_python.py
@@ -528,7 +528,7 @@
             v._mpc_ = mpc_pow_int(s._mpc_, t, prec, rounding)
             return v
         t = s.mpc_convert_lhs(t)
-        if t is not NotImplemented:
+        if t is NotImplemented:
             return t
         v = new(cls)
         if hasattr(t, '_mpf_'):
PALAESTRA_FIX
