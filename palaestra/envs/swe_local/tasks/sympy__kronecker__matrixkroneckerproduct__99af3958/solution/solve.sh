#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/matrices/expressions/kronecker.py
+++ b/sympy/matrices/expressions/kronecker.py
@@ -317,7 +317,7 @@
             # Go through each column joining each item
             for j in range(cols - 1):
                 start = start.row_join(
-                    matrix_expansion/mat[i*cols + j + 1]
+                    matrix_expansion*mat[i*cols + j + 1]
                 )
             # If this is the first element, make it the start of the
             # new row.
PALAESTRA_FIX
