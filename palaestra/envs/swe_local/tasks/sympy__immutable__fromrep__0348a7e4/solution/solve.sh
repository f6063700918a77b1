#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/matrices/immutable.py
+++ b/sympy/matrices/immutable.py
@@ -121,8 +121,8 @@
     def _fromrep(cls, rep):
         rows, cols = rep.shape
         flat_list = rep.to_sympy().to_list_flat()
-        obj = Basic.__new__(Integer(rows),
-            cls,
+        obj = Basic.__new__(cls,
+            Integer(rows),
             Integer(cols),
             Tuple(*flat_list, sympify=False))
         obj._rows = rows
PALAESTRA_FIX
