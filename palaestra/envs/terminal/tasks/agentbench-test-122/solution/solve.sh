#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && # Removing newline (if any) and counting unique characters in logfile.txt
cat logfile.txt | fold -w1 | grep -o . | sort | uniq | wc -l')
printf '%s\n' "$answer" > /answer/answer.txt
