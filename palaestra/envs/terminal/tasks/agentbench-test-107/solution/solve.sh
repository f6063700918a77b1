#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && find main_directory -type f | wc -l')
printf '%s\n' "$answer" > /answer/answer.txt
