#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/utils/decorators.py
+++ b/networkx/utils/decorators.py
@@ -924,7 +924,7 @@
 
         """
         f = f.__name__ if hasattr(f, "__name__") else f
-        fname = re.sub("_", cls._bad_chars, f)
+        fname = re.sub(cls._bad_chars, "_", f)
         return f"argmap_{fname}_{cls._count()}"
 
     def compile(self, f):
PALAESTRA_FIX
