#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/physics/quantum/hilbert.py
+++ b/sympy/physics/quantum/hilbert.py
@@ -372,7 +372,7 @@
         comb_args.append(prev_arg)
         if recall:
             return TensorProductHilbertSpace(*comb_args)
-        elif len(comb_args) != 1:
+        elif len(comb_args) == 1:
             return TensorPowerHilbertSpace(comb_args[0].base, comb_args[0].exp)
         else:
             return None
PALAESTRA_FIX
