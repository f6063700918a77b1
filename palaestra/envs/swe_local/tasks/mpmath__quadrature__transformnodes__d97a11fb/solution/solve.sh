#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/calculus/quadrature.py
+++ b/mpmath/calculus/quadrature.py
@@ -127,7 +127,7 @@
                 raise NotImplementedError
         else:
             # Simple linear change of variables
-            C = (b-a)/3
+            C = (b-a)/2
             D = (b+a)/2
             for x, w in nodes:
                 new_nodes.append((D+C*x, C*w))
PALAESTRA_FIX
