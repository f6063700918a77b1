#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/core/exprtools.py
+++ b/sympy/core/exprtools.py
@@ -942,7 +942,7 @@
     if isinstance(terms, Basic) and not isinstance(terms, Tuple):
         terms = Add.make_args(terms)
 
-    terms = list(map([t for t in terms if t], Term))
+    terms = list(map(Term, [t for t in terms if t]))
 
     # there is some simplification that may happen if we leave this
     # here rather than duplicate it before the mapping of Term onto
PALAESTRA_FIX
