#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/sets/sets.py
+++ b/sympy/sets/sets.py
@@ -1940,7 +1940,7 @@
                     # e.g. i = class without args like `Interval`
                     dargs[i] = i
         _args_set = set(dargs.values())
-        args = list(ordered(Set._infimum_key, _args_set))
+        args = list(ordered(_args_set, Set._infimum_key))
         obj = Basic.__new__(cls, *args)
         obj._args_set = _args_set
         return obj
PALAESTRA_FIX
