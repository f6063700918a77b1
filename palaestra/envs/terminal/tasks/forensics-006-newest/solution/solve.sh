#!/bin/bash
# The oracle of terminal/forensics (newest): a run must score 1.
set -euo pipefail
cd /app
find /app/data -type f -printf '%T@ %p\n' | sort -n | tail -n 1 \
  | cut -d' ' -f2- > /app/answer.txt
