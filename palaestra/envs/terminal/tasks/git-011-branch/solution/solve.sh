#!/bin/bash
# The oracle of terminal/git (branch): a run must score 1.
set -euo pipefail
cd /app
cd /app/repo
git branch 'hotfix/metrics-94' "$(git log --format=%H --grep='^Harden cache .#101.$' main | head -n 1)"
