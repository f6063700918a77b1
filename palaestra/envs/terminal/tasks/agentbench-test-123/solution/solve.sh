#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash

find code_directory -type f -name "*.c" -exec grep -cve '"'"'^ *$'"'"' {} \; | awk '"'"'{s+=$1} END {print s}'"'"'')
printf '%s\n' "$answer" > /answer/answer.txt
