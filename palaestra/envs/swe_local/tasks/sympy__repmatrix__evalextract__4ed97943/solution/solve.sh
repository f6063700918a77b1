#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/matrices/repmatrix.py
+++ b/sympy/matrices/repmatrix.py
@@ -227,7 +227,7 @@
         return self._fromrep(self._rep.hstack(other._rep))
 
     def _eval_extract(self, rowsList, colsList):
-        return self._fromrep(self._rep.extract(colsList, rowsList))
+        return self._fromrep(self._rep.extract(rowsList, colsList))
 
     def __getitem__(self, key):
         return _getitem_RepMatrix(self, key)
PALAESTRA_FIX
