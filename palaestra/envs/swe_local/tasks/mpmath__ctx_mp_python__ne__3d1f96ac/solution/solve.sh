#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/ctx_mp_python.py
+++ b/mpmath/ctx_mp_python.py
@@ -448,7 +448,7 @@
 
     def __ne__(s, t):
         b = s.__eq__(t)
-        if b is not NotImplemented:
+        if b is NotImplemented:
             return b
         return not b
 
PALAESTRA_FIX
