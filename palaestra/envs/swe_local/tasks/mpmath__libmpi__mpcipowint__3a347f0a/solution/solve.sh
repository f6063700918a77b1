#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/libmp/libmpi.py
+++ b/mpmath/libmp/libmpi.py
@@ -790,6 +790,9 @@
     wp = prec + 20
     result = (mpi_one, mpi_zero)
     while n:
+        if n & 1:
+            result = mpci_mul(result, x, wp)
+            n -= 1
         x = mpci_square(x, wp)
         n >>= 1
     return mpci_pos(result, prec)
PALAESTRA_FIX
