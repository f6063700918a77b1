#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash

# Change to sample directory
cd ~/linux_problem/sample_dir

# Count the number of non-hidden files
FILE_COUNT=$(find . -type f | grep -v '"'"'/\.'"'"' | wc -l)

# Count the number of non-hidden directories
DIR_COUNT=$(find . -type d | grep -v '"'"'/\.'"'"' | sed '"'"'1d'"'"' | wc -l)

# Sum the counts and print the result
SUM=$((FILE_COUNT + DIR_COUNT))
echo $SUM')
printf '%s\n' "$answer" > /answer/answer.txt
