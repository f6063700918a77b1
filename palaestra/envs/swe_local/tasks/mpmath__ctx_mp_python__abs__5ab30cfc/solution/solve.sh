#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/ctx_mp_python.py
+++ b/mpmath/ctx_mp_python.py
@@ -406,7 +406,7 @@
     def __abs__(s):
         prec, rounding = s.context._prec_rounding
         v = new(s.context.mpf)
-        v._mpf_ = mpc_abs(prec, s._mpc_, rounding)
+        v._mpf_ = mpc_abs(s._mpc_, prec, rounding)
         return v
 
     def __neg__(s):
PALAESTRA_FIX
