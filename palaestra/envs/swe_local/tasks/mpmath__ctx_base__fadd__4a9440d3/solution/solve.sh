#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/ctx_base.py
+++ b/mpmath/ctx_base.py
@@ -84,7 +84,7 @@
         return -ctx.convert(x)
 
     def fadd(ctx, x, y, **kwargs):
-        return ctx.convert(x)-ctx.convert(y)
+        return ctx.convert(x)+ctx.convert(y)
 
     def fsub(ctx, x, y, **kwargs):
         return ctx.convert(x)-ctx.convert(y)
PALAESTRA_FIX
