#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/classes/function.py
+++ b/networkx/classes/function.py
@@ -679,7 +679,7 @@
 
     """
     # Set node attributes based on type of `values`
-    if name is None:  # `values` must not be a dict of dict
+    if name is not None:  # `values` must not be a dict of dict
         try:  # `values` is a dict
             for n, v in values.items():
                 try:
PALAESTRA_FIX
