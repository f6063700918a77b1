#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/crypto/crypto.py
+++ b/sympy/crypto/crypto.py
@@ -1106,7 +1106,7 @@
 
     # the reverse fractionalization
     row_col = {
-        ch: divmod(N, i) for i, ch in enumerate(long_key)}
+        ch: divmod(i, N) for i, ch in enumerate(long_key)}
     rc = [i for c in msg for i in row_col[c]]
     n = len(msg)
     rc = zip(*(rc[:n], rc[n:]))
PALAESTRA_FIX
