#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && find /home/user/project -iname '"'"'*.txt'"'"' -exec wc -lwm {} \; | awk '"'"'{L += $1; W += $2; M += $3} END {print L + W + M}'"'"'')
printf '%s\n' "$answer" > /answer/answer.txt
