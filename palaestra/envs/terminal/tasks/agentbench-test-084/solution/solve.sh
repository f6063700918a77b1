#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && # Find all .txt files and calculate their size in bytes, then sum the sizes
find example/ -iname "*.txt" -exec du -b {} \; | awk '"'"'{s+=$1} END {print s}'"'"'')
printf '%s\n' "$answer" > /answer/answer.txt
