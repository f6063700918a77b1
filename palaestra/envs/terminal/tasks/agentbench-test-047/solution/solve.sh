#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash

# Count total lines and words in all '"'"'*.txt'"'"' files in the current working directory
find . -maxdepth 1 -iname "*.txt" -exec wc -lw {} + | awk '"'"'END {print $1 + $2}'"'"'')
printf '%s\n' "$answer" > /answer/answer.txt
