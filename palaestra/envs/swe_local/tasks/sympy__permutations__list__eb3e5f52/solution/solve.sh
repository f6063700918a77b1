#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/combinatorics/permutations.py
+++ b/sympy/combinatorics/permutations.py
@@ -374,7 +374,7 @@
         >>> Cycle(2, 4)(1, 2, 4).list(-1)
         [0, 2, 1]
         """
-        if (self) and size is None:
+        if not self and size is None:
             raise ValueError('must give size for empty Cycle')
         if size is not None:
             big = max([i for i in self.keys() if self[i] != i] + [0])
PALAESTRA_FIX
