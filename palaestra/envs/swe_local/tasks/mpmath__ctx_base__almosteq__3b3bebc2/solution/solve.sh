#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/ctx_base.py
+++ b/mpmath/ctx_base.py
@@ -196,7 +196,7 @@
         """
         t = ctx.convert(t)
         if abs_eps is None and rel_eps is None:
-            rel_eps = abs_eps = ctx.ldexp(-ctx.prec+4, 1)
+            rel_eps = abs_eps = ctx.ldexp(1, -ctx.prec+4)
         if abs_eps is None:
             abs_eps = rel_eps
         elif rel_eps is None:
PALAESTRA_FIX
