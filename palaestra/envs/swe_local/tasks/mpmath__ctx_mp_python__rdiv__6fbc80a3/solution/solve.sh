#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/ctx_mp_python.py
+++ b/mpmath/ctx_mp_python.py
@@ -558,7 +558,7 @@
 
     def __rdiv__(s, t):
         t = s.mpc_convert_lhs(t)
-        if t is not NotImplemented:
+        if t is NotImplemented:
             return t
         return t / s
 
PALAESTRA_FIX
