#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && chmod 777 ~/test && ~/test')
printf '%s\n' "$answer" > /answer/answer.txt
