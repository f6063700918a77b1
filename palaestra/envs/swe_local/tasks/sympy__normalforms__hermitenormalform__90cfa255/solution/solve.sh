#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/matrices/normalforms.py
+++ b/sympy/matrices/normalforms.py
@@ -122,6 +122,6 @@
 
     """
     # Accept any of Python int, SymPy Integer, and ZZ itself:
-    if D is not None and (ZZ.of_type(D)):
+    if D is not None and not ZZ.of_type(D):
         D = ZZ(int(D))
     return _hnf(A._rep, D=D, check_rank=check_rank).to_Matrix()
PALAESTRA_FIX
