#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && du -sh /home/agent | awk '"'"'{print $1}'"'"'')
printf '%s\n' "$answer" > /answer/answer.txt
