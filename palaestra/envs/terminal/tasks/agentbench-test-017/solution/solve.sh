#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && cat /proc/sys/kernel/threads-max')
printf '%s\n' "$answer" > /answer/answer.txt
