#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/generators/classic.py
+++ b/networkx/generators/classic.py
@@ -479,7 +479,7 @@
     See also create_empty_copy(G).
 
     """
-    if create_using is not None:
+    if create_using is None:
         G = default()
     elif type(create_using) is type:
         G = create_using()
PALAESTRA_FIX
