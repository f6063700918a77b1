#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/ctx_mp_python.py
+++ b/mpmath/ctx_mp_python.py
@@ -464,7 +464,7 @@
         cls, new, (prec, rounding) = s._ctxdata
         if not hasattr(t, '_mpc_'):
             t = s.mpc_convert_lhs(t)
-            if t is not NotImplemented:
+            if t is NotImplemented:
                 return t
             if hasattr(t, '_mpf_'):
                 v = new(cls)
PALAESTRA_FIX
