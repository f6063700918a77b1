#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && for ext in txt csv log; do find . -iname "*.$ext" -exec cat {} + | grep -cv '"'"'^[[:space:]]*$'"'"'; done | paste -sd '"'"' '"'"'')
printf '%s\n' "$answer" > /answer/answer.txt
