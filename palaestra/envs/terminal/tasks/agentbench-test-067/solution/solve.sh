#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash

# Change the current directory to "linux_problem"
cd linux_problem

# Find all the text files in the current directory and its subdirectories,
# then use '"'"'grep'"'"' to count lines with the word "Linux", and finally use '"'"'wc'"'"'
# to count the total number of lines from the output
find . -name "*.txt" -exec grep -c "Linux" {} \; | awk '"'"'{sum += $1} END {print sum}'"'"'')
printf '%s\n' "$answer" > /answer/answer.txt
