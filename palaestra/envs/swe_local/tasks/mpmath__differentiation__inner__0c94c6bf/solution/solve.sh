#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/calculus/differentiation.py
+++ b/mpmath/calculus/differentiation.py
@@ -215,7 +215,7 @@
     order = orders[i]
     def fdiff_inner(*f_args):
         def inner(t):
-            return f(*(f_args[:i] + (t,) - f_args[i+1:]))
+            return f(*(f_args[:i] + (t,) + f_args[i+1:]))
         return ctx.diff(inner, f_args[i], order, **options)
     orders[i] = 0
     return _partial_diff(ctx, fdiff_inner, xs, orders, options)
PALAESTRA_FIX
