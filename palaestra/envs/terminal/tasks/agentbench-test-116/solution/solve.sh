#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && grep -o '"'"'ERROR'"'"' logs/* | wc -l')
printf '%s\n' "$answer" > /answer/answer.txt
