#!/bin/bash
# The oracle of terminal/logs (compress-old): a run must score 1.
set -euo pipefail
cd /app
now=$(cat /etc/log-clock)
for f in /app/logs/*.log; do
  if [ $(( now - $(stat -c %Y "$f") )) -gt $(( 6 * 86400 )) ]; then gzip "$f"; fi
done
