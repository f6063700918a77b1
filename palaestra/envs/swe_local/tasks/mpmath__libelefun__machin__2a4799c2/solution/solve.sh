#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/libmp/libelefun.py
+++ b/mpmath/libmp/libelefun.py
@@ -153,7 +153,7 @@
     extraprec = 10
     s = MPZ_ZERO
     for a, b in coefs:
-        s += MPZ(a) * acot_fixed(prec+extraprec, MPZ(b), hyperbolic)
+        s += MPZ(a) * acot_fixed(MPZ(b), prec+extraprec, hyperbolic)
     return (s >> extraprec)
 
 # Logarithms of integers are needed for various computations involving
PALAESTRA_FIX
