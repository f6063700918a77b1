#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/function.py
+++ b/networkx/classes/function.py
@@ -823,7 +823,7 @@
         {(0, 1): 7}
 
     """
-    if name is None:
+    if name is not None:
         # `values` does not contain attribute names
         try:
             # if `values` is a dict using `.items()` => {edge: value}
PALAESTRA_FIX
