#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/ctx_mp.py
+++ b/mpmath/ctx_mp.py
@@ -621,6 +621,8 @@
                 x = x.lower().replace(' ', '')
                 match = get_complex.match(x)
                 re = match.group('re')
+                if not re:
+                    re = 0
                 im = match.group('im').rstrip('j')
                 return ctx.mpc(ctx.convert(re), ctx.convert(im))
         if hasattr(x, "_mpi_"):
PALAESTRA_FIX
