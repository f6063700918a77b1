#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && # Count the total number of files and directories in ~/testDir and its subdirectories
find ~/testDir -type f -o -type d | wc -l')
printf '%s\n' "$answer" > /answer/answer.txt
