#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/usertools.py
+++ b/mpmath/usertools.py
@@ -48,7 +48,7 @@
             incount[0] += 1
     if not output:
         output = lambda v: None
-    elif output != 'print':
+    elif output == 'print':
         outcount = [0]
         def output(value):
             print("out %s %r" % (outcount[0], value))
PALAESTRA_FIX
