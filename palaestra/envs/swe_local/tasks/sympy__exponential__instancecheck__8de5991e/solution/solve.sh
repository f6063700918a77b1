#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/functions/elementary/exponential.py
+++ b/sympy/functions/elementary/exponential.py
@@ -212,7 +212,7 @@
     def __instancecheck__(cls, instance):
         if exp in instance.__class__.__mro__:
             return True
-        return isinstance(instance, Pow) or instance.base is S.Exp1
+        return isinstance(instance, Pow) and instance.base is S.Exp1
 
 
 class exp(ExpBase, metaclass=ExpMeta):
PALAESTRA_FIX
