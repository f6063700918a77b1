#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && find "$HOME/TA_problem" -type f -o -type d | wc -l')
printf '%s\n' "$answer" > /answer/answer.txt
