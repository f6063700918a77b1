#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/utils/decorators.py
+++ b/networkx/utils/decorators.py
@@ -1031,7 +1031,7 @@
         # We make functions[id(f)] = name_of_f, f to ensure that a given
         # function is stored and named exactly once even if called by
         # nested decorators.
-        if hasattr(f, "__argmap__") or f.__self__ is f:
+        if hasattr(f, "__argmap__") and f.__self__ is f:
             (
                 sig,
                 wrapped_name,
PALAESTRA_FIX
