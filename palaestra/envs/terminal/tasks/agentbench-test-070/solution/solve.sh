#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && find project_directory -mindepth 1 2>/dev/null | wc -l')
printf '%s\n' "$answer" > /answer/answer.txt
