#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/ctx_mp_python.py
+++ b/mpmath/ctx_mp_python.py
@@ -418,7 +418,7 @@
     def conjugate(s):
         cls, new, (prec, rounding) = s._ctxdata
         v = new(cls)
-        v._mpc_ = mpc_conjugate(prec, s._mpc_, rounding)
+        v._mpc_ = mpc_conjugate(s._mpc_, prec, rounding)
         return v
 
     def __nonzero__(s):
PALAESTRA_FIX
