#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/core/symbol.py
+++ b/sympy/core/symbol.py
@@ -550,7 +550,7 @@
         exclude = tuple([sympify(x) for x in exclude])
         properties = tuple(properties)
         cls._sanitize(assumptions, cls)
-        return Wild.__xnew__(name, cls, exclude, properties, **assumptions)
+        return Wild.__xnew__(cls, name, exclude, properties, **assumptions)
 
     def __getnewargs__(self):
         return (self.name, self.exclude, self.properties)
PALAESTRA_FIX
