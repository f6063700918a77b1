#!/bin/bash
# The oracle of terminal/git (blame): a run must score 1.
set -euo pipefail
cd /app
git -C /app/repo log --format=%H -S'OPTION_5 = 862' -- src/auth.py | tail -n 1 > /app/answer.txt
