#!/bin/bash
# The oracle of terminal/forensics (recover): a run must score 1.
set -euo pipefail
cd /app
mkdir -p /app/recovered /tmp/recover
for f in $(find /app/data -type f -name '*.bin'); do
  tar -xzf "$f" -C /tmp/recover 2>/dev/null || true
done
cp "$(find /tmp/recover -name 'iris-notes.txt' | head -n 1)" /app/recovered/iris-notes.txt
