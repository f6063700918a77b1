#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/physics/quantum/hilbert.py
+++ b/sympy/physics/quantum/hilbert.py
@@ -625,7 +625,7 @@
 
     @property
     def dimension(self):
-        if self.base.dimension is not S.Infinity:
+        if self.base.dimension is S.Infinity:
             return S.Infinity
         else:
             return self.base.dimension**self.exp
PALAESTRA_FIX
