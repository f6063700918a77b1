#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && find problem_directory -type f -name "*.txt" -exec grep -o -w "Linux" {} + | wc -l')
printf '%s\n' "$answer" > /answer/answer.txt
