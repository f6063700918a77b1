#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/algorithms/isomorphism/isomorphvf2.py
+++ b/networkx/algorithms/isomorphism/isomorphvf2.py
@@ -481,7 +481,7 @@
                     num1 += 1
             num2 = 0
             for neighbor in self.G2[G2_node]:
-                if (neighbor in self.inout_2) or (neighbor not in self.core_2):
+                if (neighbor in self.inout_2) and (neighbor not in self.core_2):
                     num2 += 1
             if self.test == "graph":
                 if not (num1 == num2):
PALAESTRA_FIX
