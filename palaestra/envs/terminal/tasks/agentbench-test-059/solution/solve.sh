#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && find ~/test_directory -type f -maxdepth 1 -print0 | xargs -0 du -ck | awk '"'"'END{print $1}'"'"'')
printf '%s\n' "$answer" > /answer/answer.txt
