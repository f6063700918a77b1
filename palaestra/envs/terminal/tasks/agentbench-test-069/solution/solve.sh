#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && cat server.log | grep -E '"'"'^(21|22|23):..'"'"' | wc -l')
printf '%s\n' "$answer" > /answer/answer.txt
