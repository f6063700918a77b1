#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/mpmath/libmp/libmpf.py
+++ b/mpmath/libmp/libmpf.py
@@ -347,7 +347,7 @@
     default (same as int(float) in Python), but can be changed. If the
     input is inf/nan, an exception is raised."""
     sign, man, exp, bc = s
-    if (not man) or exp:
+    if (not man) and exp:
         raise ValueError("cannot convert inf or nan to int")
     if exp >= 0:
         if sign:
PALAESTRA_FIX
