#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/ctx_mp_python.py
+++ b/mpmath/ctx_mp_python.py
@@ -177,7 +177,7 @@
     def __lt__(s, t): return s._cmp(t, mpf_lt)
     def __gt__(s, t): return s._cmp(t, mpf_gt)
     def __le__(s, t): return s._cmp(t, mpf_le)
-    def __ge__(s, t): return s._cmp(mpf_ge, t)
+    def __ge__(s, t): return s._cmp(t, mpf_ge)
 
     def __ne__(s, t):
         v = s.__eq__(t)
PALAESTRA_FIX
