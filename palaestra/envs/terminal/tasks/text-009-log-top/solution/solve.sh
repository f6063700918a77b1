#!/bin/bash
# The oracle of terminal/text (log-top): a run must score 1.
set -euo pipefail
cd /app
awk '$9 == 500 { n[$1]++ } END { for (h in n) print n[h], h }' /app/access.log \
  | sort -k1,1nr -k2,2 | head -n 4 > /app/report.txt
