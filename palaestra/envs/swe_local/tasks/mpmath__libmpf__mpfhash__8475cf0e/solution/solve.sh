#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/libmp/libmpf.py
+++ b/mpmath/libmp/libmpf.py
@@ -548,6 +548,10 @@
         ssign, sman, sexp, sbc = s
 
         # Handle special numbers
+        if not sman:
+            if s == fnan: return sys.hash_info.nan
+            if s == finf: return sys.hash_info.inf
+            if s == fninf: return -sys.hash_info.inf
         h = sman % HASH_MODULUS
         if sexp >= 0:
             sexp = sexp % HASH_BITS
PALAESTRA_FIX
