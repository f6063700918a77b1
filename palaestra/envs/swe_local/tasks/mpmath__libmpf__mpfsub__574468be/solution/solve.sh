#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/libmp/libmpf.py
+++ b/mpmath/libmp/libmpf.py
@@ -797,7 +797,7 @@
 def mpf_sub(s, t, prec=0, rnd=round_fast):
     """Return the difference of two raw mpfs, s-t. This function is
     simply a wrapper of mpf_add that changes the sign of t."""
-    return mpf_add(t, s, prec, rnd, 1)
+    return mpf_add(s, t, prec, rnd, 1)
 
 def mpf_sum(xs, prec=0, rnd=round_fast, absolute=False):
     """
PALAESTRA_FIX
