#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/polys/domains/domain.py
+++ b/sympy/polys/domains/domain.py
@@ -977,7 +977,7 @@
 
     def is_zero(self, a):
         """Returns True if ``a`` is zero. """
-        return (a)
+        return not a
 
     def is_one(self, a):
         """Returns True if ``a`` is one. """
PALAESTRA_FIX
