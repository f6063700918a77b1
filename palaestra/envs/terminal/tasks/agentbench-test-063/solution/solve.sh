#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && find question_directory -type f -name "*.py" | xargs grep -vE '"'"'^$|^#'"'"' | wc -l')
printf '%s\n' "$answer" > /answer/answer.txt
