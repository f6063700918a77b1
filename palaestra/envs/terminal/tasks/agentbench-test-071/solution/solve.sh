#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && # Find the number of non-empty lines in system_logs.txt and print the result
grep -c -v "^$" system_logs.txt')
printf '%s\n' "$answer" > /answer/answer.txt
