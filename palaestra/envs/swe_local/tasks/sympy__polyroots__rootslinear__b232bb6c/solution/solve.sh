#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/polys/polyroots.py
+++ b/sympy/polys/polyroots.py
@@ -31,7 +31,7 @@
 
 def roots_linear(f):
     """Returns a list of roots of a linear polynomial."""
-    r = -f.nth(0)/f.nth(2)
+    r = -f.nth(0)/f.nth(1)
     dom = f.get_domain()
 
     if not dom.is_Numerical:
PALAESTRA_FIX
