#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && [ -x "$(command -v npm)" ] && echo '"'"'installed'"'"' || echo '"'"'not-yet'"'"'')
printf '%s\n' "$answer" > /answer/answer.txt
