#!/bin/bash
# The oracle of terminal/git (commits): a run must score 1.
set -euo pipefail
cd /app
cd /app/repo
git add src/storage.py && git commit -q -m 'Tune storage limits'
git add docs/parser-24.md && git commit -q -m 'Document parser-24'
