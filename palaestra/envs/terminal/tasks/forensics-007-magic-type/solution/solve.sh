#!/bin/bash
# The oracle of terminal/forensics (magic-type): a run must score 1.
set -euo pipefail
cd /app
for f in $(find /app/data -type f); do
  if [ "$(head -c 4 "$f" | od -An -tx1 | tr -d ' \n')" = 89504e47 ]; then echo "$f" > /app/answer.txt; fi
done
