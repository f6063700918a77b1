#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/tensor/array/ndim_array.py
+++ b/sympy/tensor/array/ndim_array.py
@@ -172,7 +172,7 @@
     def _get_tuple_index(self, integer_index):
         index = []
         for i, sh in enumerate(reversed(self.shape)):
-            index.append(integer_index // sh)
+            index.append(integer_index % sh)
             integer_index //= sh
         index.reverse()
         return tuple(index)
PALAESTRA_FIX
