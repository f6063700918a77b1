#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/polys/polyclasses.py
+++ b/sympy/polys/polyclasses.py
@@ -153,7 +153,7 @@
             # Not possible to check with isinstance
             if type(rep) is dict:
                 rep = dmp_from_dict(rep, lev, dom)
-            elif (isinstance(rep, list)):
+            elif not isinstance(rep, list):
                 rep = dmp_ground(dom.convert(rep), lev)
         else:
             rep, lev = dmp_validate(rep)
PALAESTRA_FIX
