#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/ctx_iv.py
+++ b/mpmath/ctx_iv.py
@@ -159,7 +159,7 @@
 
     def __hash__(self):
         (a, b), (c,d) = self._mpci_
-        if a == b and c != d:
+        if a == b and c == d:
             return mpc_hash((a, c))
         else:
             return hash(self._mpci_)
PALAESTRA_FIX
