#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && ps -ef | grep -i '"'"'bash'"'"' | grep -v '"'"'grep'"'"' | wc -l')
printf '%s\n' "$answer" > /answer/answer.txt
