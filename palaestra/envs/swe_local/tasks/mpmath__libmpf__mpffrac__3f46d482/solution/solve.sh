#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/libmp/libmpf.py
+++ b/mpmath/libmp/libmpf.py
@@ -405,7 +405,7 @@
     return v
 
 def mpf_frac(s, prec=0, rnd=round_fast):
-    return mpf_sub(mpf_floor(s), s, prec, rnd)
+    return mpf_sub(s, mpf_floor(s), prec, rnd)
 
 def from_float(x, prec=53, rnd=round_fast):
     """Create a raw mpf from a Python float, rounding if necessary.
PALAESTRA_FIX
