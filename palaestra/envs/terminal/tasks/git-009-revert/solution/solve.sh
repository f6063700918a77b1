#!/bin/bash
# The oracle of terminal/git (revert): a run must score 1.
set -euo pipefail
cd /app
cd /app/repo
bad=$(git log --format=%H -S'timeout = 0' -- config.ini | tail -n 1)
git revert --no-edit "$bad"
