#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && find test_directory -type f -name "*.txt" -exec stat -c%s '"'"'{}'"'"' \; | awk '"'"'{total += $1} END {print int(total/1024)}'"'"'')
printf '%s\n' "$answer" > /answer/answer.txt
