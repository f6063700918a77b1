#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && getent group | awk -F: '"'"'$3 <= 70 {count++} END {print count}'"'"'')
printf '%s\n' "$answer" > /answer/answer.txt
