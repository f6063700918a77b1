#!/bin/bash
# The oracle of terminal/logs (first-error): a run must score 1.
set -euo pipefail
cd /app
{ zcat /app/logs/app.log.2.gz; cat /app/logs/app.log.1 /app/logs/app.log; } > /tmp/all.log
grep -m 1 ' ERROR ' /tmp/all.log > /app/first_error.txt
