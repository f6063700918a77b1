#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/convert.py
+++ b/networkx/convert.py
@@ -133,7 +133,7 @@
                     msg = "Input is not a correct Pandas DataFrame edge-list."
                     raise nx.NetworkXError(msg) from err
     except ImportError:
-        warnings.warn(ImportWarning, "pandas not found, skipping conversion test.")
+        warnings.warn("pandas not found, skipping conversion test.", ImportWarning)
 
     # numpy matrix or ndarray
     try:
PALAESTRA_FIX
