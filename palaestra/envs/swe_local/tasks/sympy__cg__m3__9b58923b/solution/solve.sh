#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/physics/quantum/cg.py
+++ b/sympy/physics/quantum/cg.py
@@ -104,7 +104,7 @@
 
     @property
     def m3(self):
-        return self.args[4]
+        return self.args[5]
 
     @property
     def is_symbolic(self):
PALAESTRA_FIX
