#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/matrices/linalg.py
+++ b/mpmath/matrices/linalg.py
@@ -573,7 +573,7 @@
         """
         if norm is None:
             norm = lambda x: ctx.mnorm(x,1)
-        return norm(A) / norm(ctx.inverse(A))
+        return norm(A) * norm(ctx.inverse(A))
 
     def lu_solve_mat(ctx, a, b):
         """Solve a * x = b  where a and b are matrices."""
PALAESTRA_FIX
