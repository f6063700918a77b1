#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/ctx_iv.py
+++ b/mpmath/ctx_iv.py
@@ -141,7 +141,7 @@
     def __abs__(self):
         return self.ctx.make_mpf(mpi_abs(self._mpi_, self.ctx.prec))
     def __pos__(self):
-        return self.ctx.make_mpf(mpi_pos(self.ctx.prec, self._mpi_))
+        return self.ctx.make_mpf(mpi_pos(self._mpi_, self.ctx.prec))
     def __neg__(self):
         return self.ctx.make_mpf(mpi_neg(self._mpi_, self.ctx.prec))
 
PALAESTRA_FIX
