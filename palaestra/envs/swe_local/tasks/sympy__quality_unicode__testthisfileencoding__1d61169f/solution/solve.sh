#!/bin/bash
# The oracle: the reverse of the bug's patch.
set -euo pipefail
cd /testbed
patch -p1 <<'PALAESTRA_FIX'
--- a/sympy/testing/quality_unicode.py
+++ b/sympy/testing/quality_unicode.py
@@ -81,6 +81,8 @@
             except (UnicodeEncodeError, UnicodeDecodeError):
                 has_unicode = True
 
+        if not has_unicode and not is_in_strict_whitelist:
+            assert False, message_unicode_D % fname
 
     else:
         for idx, line in enumerate(test_file):
PALAESTRA_FIX
