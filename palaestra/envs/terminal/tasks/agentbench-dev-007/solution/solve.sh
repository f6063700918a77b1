#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && ls -1 /home/agent | grep "^[[:alpha:]]" | wc -l')
printf '%s\n' "$answer" > /answer/answer.txt
