#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/matrices/expressions/special.py
+++ b/sympy/matrices/expressions/special.py
@@ -28,7 +28,7 @@
         cls._check_dim(m)
         cls._check_dim(n)
 
-        return super().__new__(m, cls, n)
+        return super().__new__(cls, m, n)
 
     @property
     def shape(self):
PALAESTRA_FIX
