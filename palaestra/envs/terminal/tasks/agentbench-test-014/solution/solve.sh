#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && find . -type f -name "*.tep" | wc -l')
printf '%s\n' "$answer" > /answer/answer.txt
