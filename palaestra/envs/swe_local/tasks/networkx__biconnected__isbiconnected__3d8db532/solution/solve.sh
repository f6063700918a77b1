#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/components/biconnected.py
+++ b/networkx/algorithms/components/biconnected.py
@@ -85,7 +85,7 @@
         next(bccs)
     except StopIteration:
         # Only one bicomponent
-        return len(bcc) != len(G)
+        return len(bcc) == len(G)
     else:
         # Multiple bicomponents
         return False
PALAESTRA_FIX
