#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && # The example script returns the total number of non-empty directories in the "/etc" directory.

find /etc -mindepth 1 -maxdepth 1 -type d -not -empty | wc -l')
printf '%s\n' "$answer" > /answer/answer.txt
