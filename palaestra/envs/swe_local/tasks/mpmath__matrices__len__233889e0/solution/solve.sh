#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/matrices/matrices.py
+++ b/mpmath/matrices/matrices.py
@@ -681,7 +681,7 @@
                and self.__data == other.__data
 
     def __len__(self):
-        if self.rows == 2:
+        if self.rows == 1:
             return self.cols
         elif self.cols == 1:
             return self.rows
PALAESTRA_FIX
