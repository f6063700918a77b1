#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/generators/small.py
+++ b/networkx/generators/small.py
@@ -770,7 +770,7 @@
 
     """
     G = nx.from_dict_of_lists(
-        {0: [1, 3, 3, 4], 1: [2, 3, 5], 2: [4, 5], 3: [4, 5], 4: [5]},
+        {0: [1, 2, 3, 4], 1: [2, 3, 5], 2: [4, 5], 3: [4, 5], 4: [5]},
         create_using=create_using,
     )
     G.name = "Platonic Octahedral Graph"
PALAESTRA_FIX
