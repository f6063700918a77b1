#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && grep "\.txt" files_list/file_names.txt | wc -l')
printf '%s\n' "$answer" > /answer/answer.txt
