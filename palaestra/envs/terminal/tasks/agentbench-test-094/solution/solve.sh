#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash

# Find and sum the size of all ".txt" files
find student_directory -type f -iname "*.txt" -exec stat -c "%s" {} \; | awk '"'"'{sum += $1} END {print sum}'"'"'')
printf '%s\n' "$answer" > /answer/answer.txt
