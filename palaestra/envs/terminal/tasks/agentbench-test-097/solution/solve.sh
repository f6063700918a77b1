#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && find ./problem_directory -maxdepth 1 -type f -name "*.txt" | xargs grep -c "linux" | awk -F: '"'"'{sum += $NF} END {print sum}'"'"'')
printf '%s\n' "$answer" > /answer/answer.txt
