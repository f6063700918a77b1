#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/series/gruntz.py
+++ b/sympy/series/gruntz.py
@@ -356,7 +356,7 @@
     Also returns exps, with the appropriate substitutions made.
     """
     u, b = f.union(g, exps)
-    return mrv_max3(g.do_subs(exps), f, g, f.do_subs(exps),
+    return mrv_max3(f, g.do_subs(exps), g, f.do_subs(exps),
                     u, b, x)
 
 
PALAESTRA_FIX
