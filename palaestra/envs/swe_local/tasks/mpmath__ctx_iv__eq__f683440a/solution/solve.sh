#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/ctx_iv.py
+++ b/mpmath/ctx_iv.py
@@ -131,7 +131,7 @@
                 return NotImplemented
         return cmpfun(s._mpi_, t._mpi_)
 
-    def __eq__(s, t): return s._compare(libmp.mpi_eq, t)
+    def __eq__(s, t): return s._compare(t, libmp.mpi_eq)
     def __ne__(s, t): return s._compare(t, libmp.mpi_ne)
     def __lt__(s, t): return s._compare(t, libmp.mpi_lt)
     def __le__(s, t): return s._compare(t, libmp.mpi_le)
PALAESTRA_FIX
