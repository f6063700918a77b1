#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && getent passwd | cut -d: -f1 | while read user; do groups $user | cut -d '"'"':'"'"' -f 2 | tr -s '"'"' '"'"' | sed '"'"'s/^ *//;s/ *$//'"'"' | tr '"'"' '"'"' '"'"'\n'"'"' | grep -v '"'"'^$'"'"' | tr '"'"'\'"'"' '"'"'
'"'"' | wc -l | grep -q -P '"'"'[4-9]|\d{2,}'"'"' && echo $user; done | wc -l')
printf '%s\n' "$answer" > /answer/answer.txt
