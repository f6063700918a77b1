#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash

# Change the current directory to '"'"'reports'"'"'
cd reports

# List all the text files in the reports directory
# Read the integer values from the text files
# Sum up all the values and print the result
find . -type f -name '"'"'*.txt'"'"' | xargs cat | awk '"'"'{sum+=$1} END{print sum}'"'"'

# Output: 90')
printf '%s\n' "$answer" > /answer/answer.txt
