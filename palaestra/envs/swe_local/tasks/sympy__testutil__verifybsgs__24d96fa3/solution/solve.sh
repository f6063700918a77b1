#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/combinatorics/testutil.py
+++ b/sympy/combinatorics/testutil.py
@@ -110,7 +110,7 @@
 
     """
     from sympy.combinatorics.perm_groups import PermutationGroup
-    strong_gens_distr = _distribute_gens_by_base(gens, base)
+    strong_gens_distr = _distribute_gens_by_base(base, gens)
     current_stabilizer = group
     for i in range(len(base)):
         candidate = PermutationGroup(strong_gens_distr[i])
PALAESTRA_FIX
