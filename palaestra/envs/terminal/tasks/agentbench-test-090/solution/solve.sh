#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && grep -r "ERR0003" log_files | wc -l')
printf '%s\n' "$answer" > /answer/answer.txt
