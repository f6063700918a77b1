#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/networkx/readwrite/gexf.py
+++ b/networkx/readwrite/gexf.py
@@ -640,7 +640,7 @@
         # If 'start' or 'end' appears, alter Graph mode to dynamic and
         # set timeformat
         if self.graph_element.get("mode") == "static":
-            if start_or_end is None:
+            if start_or_end is not None:
                 if isinstance(start_or_end, str):
                     timeformat = "date"
                 elif isinstance(start_or_end, float):
PALAESTRA_FIX
