#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && getent group | wc -l')
printf '%s\n' "$answer" > /answer/answer.txt
