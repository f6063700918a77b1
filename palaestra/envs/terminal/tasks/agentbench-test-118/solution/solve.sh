#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && find ~/TA_problem_directory -mindepth 1 -maxdepth 1 | wc -l')
printf '%s\n' "$answer" > /answer/answer.txt
