#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && # Find the total size of all .txt files in the /tmp/my-task/test-dir directory
find /tmp/my-task/test-dir -type f -name "*.txt" -exec stat -c%s {} \; | awk '"'"'{sum += $1} END {print sum}'"'"'')
printf '%s\n' "$answer" > /answer/answer.txt
