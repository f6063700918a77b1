#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/ctx_mp_python.py
+++ b/mpmath/ctx_mp_python.py
@@ -161,7 +161,7 @@
     def __neg__(s):
         cls, new, (prec, rounding) = s._ctxdata
         v = new(cls)
-        v._mpf_ = mpf_neg(prec, s._mpf_, rounding)
+        v._mpf_ = mpf_neg(s._mpf_, prec, rounding)
         return v
 
     def _cmp(s, t, func):
PALAESTRA_FIX
