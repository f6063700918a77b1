#!/bin/bash
# The oracle of terminal/forensics (largest): a run must score 1.
set -euo pipefail
cd /app
find /app/data -type f -printf '%s %p\n' | sort -n | tail -n 1 \
  | cut -d' ' -f2- > /app/answer.txt
