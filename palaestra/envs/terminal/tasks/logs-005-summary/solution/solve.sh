#!/bin/bash
# The oracle of terminal/logs (summary): a run must score 1.
set -euo pipefail
cd /app
{ echo day,level,count
  awk '{ print substr($1, 1, 10) "," $2 }' /app/service.log | sort | uniq -c \
  | awk '{ print $2 "," $1 }'; } > /app/summary.csv
