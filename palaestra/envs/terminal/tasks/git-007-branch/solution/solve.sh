#!/bin/bash
# The oracle of terminal/git (branch): a run must score 1.
set -euo pipefail
cd /app
cd /app/repo
git branch 'hotfix/loader-75' "$(git log --format=%H --grep='^Simplify cache .#102.$' main | head -n 1)"
