#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/core/symbol.py
+++ b/sympy/core/symbol.py
@@ -558,7 +558,7 @@
     @staticmethod
     @cacheit
     def __xnew__(cls, name, exclude, properties, **assumptions):
-        obj = Symbol.__xnew__(name, cls, **assumptions)
+        obj = Symbol.__xnew__(cls, name, **assumptions)
         obj.exclude = exclude
         obj.properties = properties
         return obj
PALAESTRA_FIX
