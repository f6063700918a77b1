#!/bin/bash
# The oracle of terminal/git (commits): a run must score 1.
set -euo pipefail
cd /app
cd /app/repo
git add src/scheduler.py && git commit -q -m 'Tune scheduler limits'
git add docs/scheduler-89.md && git commit -q -m 'Document scheduler-89'
