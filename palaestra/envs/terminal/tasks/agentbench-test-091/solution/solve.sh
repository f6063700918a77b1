#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && find /tmp/experiment/ -type f -name "*.txt" -exec wc -l {} \; | awk '"'"'{ total += $1 } END { print total }'"'"'')
printf '%s\n' "$answer" > /answer/answer.txt
