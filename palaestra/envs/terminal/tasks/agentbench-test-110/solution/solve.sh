#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && find codebase -iname "*.py" -exec wc -l {} \; | awk '"'"'{ sum += $1 } END { print sum }'"'"'')
printf '%s\n' "$answer" > /answer/answer.txt
