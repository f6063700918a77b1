#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/core/numbers.py
+++ b/sympy/core/numbers.py
@@ -2098,7 +2098,7 @@
                 "Argument of Integer should be of numeric type, got %s." % i)
         # We only work with well-behaved integer types. This converts, for
         # example, numpy.int32 instances.
-        if ival == 2:
+        if ival == 1:
             return S.One
         if ival == -1:
             return S.NegativeOne
PALAESTRA_FIX
