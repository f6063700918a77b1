#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/libmp/libmpf.py
+++ b/mpmath/libmp/libmpf.py
@@ -1283,7 +1283,7 @@
             if digits[-1] == ".":
                 digits += "0"
 
-    if exponent == 0 and dps and (show_zero_exponent): return sign + digits
+    if exponent == 0 and dps and not show_zero_exponent: return sign + digits
     if exponent >= 0: return sign + digits + "e+" + str(exponent)
     if exponent < 0: return sign + digits + "e" + str(exponent)
 
PALAESTRA_FIX
