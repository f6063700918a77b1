#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/ctx_mp_python.py
+++ b/mpmath/ctx_mp_python.py
@@ -149,7 +149,7 @@
     def __abs__(s):
         cls, new, (prec, rounding) = s._ctxdata
         v = new(cls)
-        v._mpf_ = mpf_abs(prec, s._mpf_, rounding)
+        v._mpf_ = mpf_abs(s._mpf_, prec, rounding)
         return v
 
     def __pos__(s):
PALAESTRA_FIX
