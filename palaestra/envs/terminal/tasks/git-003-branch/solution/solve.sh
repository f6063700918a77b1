#!/bin/bash
# The oracle of terminal/git (branch): a run must score 1.
set -euo pipefail
cd /app
cd /app/repo
git branch 'hotfix/auth-18' "$(git log --format=%H --grep='^Document auth .#103.$' main | head -n 1)"
