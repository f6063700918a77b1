#!/bin/bash
# The oracle of terminal/git (commits): a run must score 1.
set -euo pipefail
cd /app
cd /app/repo
git add src/cache.py && git commit -q -m 'Tune cache limits'
git add docs/parser-10.md && git commit -q -m 'Document parser-10'
