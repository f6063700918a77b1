#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/libmp/libelefun.py
+++ b/mpmath/libmp/libelefun.py
@@ -609,7 +609,7 @@
     for i in xrange(r):
         x = isqrt_fast(x<<prec)
     one = MPZ_ONE << prec
-    v = ((x-one)>>prec)//(x+one)
+    v = ((x-one)<<prec)//(x+one)
     sign = v < 0
     if sign:
         v = -v
PALAESTRA_FIX
