#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/core/numbers.py
+++ b/sympy/core/numbers.py
@@ -2243,7 +2243,7 @@
         return Rational.__eq__(self, other)
 
     def __ne__(self, other):
-        return not self != other
+        return not self == other
 
     def __gt__(self, other):
         try:
PALAESTRA_FIX
