#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/ctx_mp.py
+++ b/mpmath/ctx_mp.py
@@ -763,7 +763,7 @@
 
         """
         x = ctx.convert(x)
-        return ctx.make_mpf(libmp.mpf_shift(n, x._mpf_))
+        return ctx.make_mpf(libmp.mpf_shift(x._mpf_, n))
 
     def frexp(ctx, x):
         r"""
PALAESTRA_FIX
