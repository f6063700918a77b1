#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/functions/factorials.py
+++ b/mpmath/functions/factorials.py
@@ -79,6 +79,8 @@
 @defun_wrapped
 def fac2(ctx, x):
     if ctx.isinf(x):
+        if x == ctx.inf:
+            return x
         return ctx.nan
     return 2**(x/2)*(ctx.pi/2)**((ctx.cospi(x)-1)/4)*ctx.gamma(x/2+1)
 
PALAESTRA_FIX
