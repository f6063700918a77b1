#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/ctx_fp.py
+++ b/mpmath/ctx_fp.py
@@ -174,7 +174,7 @@
             n = round(z.real)
         else:
             n = round(z)
-        if n != z:
+        if n == z:
             return n, ctx.ninf
         return n, ctx.mag(abs(z-n))
 
PALAESTRA_FIX
