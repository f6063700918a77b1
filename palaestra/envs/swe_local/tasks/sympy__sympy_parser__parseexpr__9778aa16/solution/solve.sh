#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/parsing/sympy_parser.py
+++ b/sympy/parsing/sympy_parser.py
@@ -1078,7 +1078,7 @@
                 raise TypeError(filldedent('''
                     expected a function in `transformations`,
                     not %s''' % func_name(_)))
-            if arity(_) != 2:
+            if arity(_) != 3:
                 raise TypeError(filldedent('''
                     a transformation should be function that
                     takes 3 arguments'''))
PALAESTRA_FIX
