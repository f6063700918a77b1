#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/isomorphism/isomorphvf2.py
+++ b/networkx/algorithms/isomorphism/isomorphvf2.py
@@ -271,7 +271,7 @@
         # For now, I just copy the code.
 
         # Check global properties
-        if self.G1.order() == self.G2.order():
+        if self.G1.order() != self.G2.order():
             return False
 
         # Check local properties
PALAESTRA_FIX
