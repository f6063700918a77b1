#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && grep -r -c '"'"'Linux'"'"' --include='"'"'*.txt'"'"' ~/Linux_files | awk -F: '"'"'{sum+=$2} END {print sum}'"'"'')
printf '%s\n' "$answer" > /answer/answer.txt
