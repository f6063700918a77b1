#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && # The following command can be used to get the standard answer
find . -maxdepth 1 -name '"'"'*.log'"'"' -print0 | xargs -0 grep -iw '"'"'\<error\>'"'"' | wc -l')
printf '%s\n' "$answer" > /answer/answer.txt
