#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/utils/random_sequence.py
+++ b/networkx/utils/random_sequence.py
@@ -142,7 +142,7 @@
 
     The input is a dictionary of items with weights as values.
     """
-    if k >= len(mapping):
+    if k > len(mapping):
         raise ValueError("sample larger than population")
     sample = set()
     while len(sample) < k:
PALAESTRA_FIX
