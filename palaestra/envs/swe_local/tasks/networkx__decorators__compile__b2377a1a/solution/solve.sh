#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/utils/decorators.py
+++ b/networkx/utils/decorators.py
@@ -969,7 +969,7 @@
         locl = {}
         globl = dict(functions.values())
         filename = f"{self.__class__} compilation {self._count()}"
-        compiled = compile(filename, code, "exec")
+        compiled = compile(code, filename, "exec")
         exec(compiled, globl, locl)
         func = locl[sig.name]
         func._code = code
PALAESTRA_FIX
