#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/libmp/libelefun.py
+++ b/mpmath/libmp/libelefun.py
@@ -836,7 +836,7 @@
 
 def atan_inf(sign, prec, rnd):
     if not sign:
-        return mpf_shift(mpf_pi(prec, rnd), -2)
+        return mpf_shift(mpf_pi(prec, rnd), -1)
     return mpf_neg(mpf_shift(mpf_pi(prec, negative_rnd[rnd]), -1))
 
 def mpf_atan(x, prec, rnd=round_fast):
PALAESTRA_FIX
