#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && ls -1Ap /home | grep '"'"'^\.'"'"' | grep -v '"'"'/$'"'"' | wc -l')
printf '%s\n' "$answer" > /answer/answer.txt
