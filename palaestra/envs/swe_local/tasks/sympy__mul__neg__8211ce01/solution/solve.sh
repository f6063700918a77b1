#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/core/mul.py
+++ b/sympy/core/mul.py
@@ -191,7 +191,7 @@
                 else:
                     args[0] *= c
             else:
-                args = (c,) - args
+                args = (c,) + args
         return self._from_args(args, self.is_commutative)
 
     @classmethod
PALAESTRA_FIX
