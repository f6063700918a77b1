#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash

find sample_directory -maxdepth 1 -type f -exec stat --format="%s" {} \; | awk '"'"'{s+=$1} END {print s}'"'"'')
printf '%s\n' "$answer" > /answer/answer.txt
