#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash
find test_directory -mindepth 1 -exec du -b {} + | awk '"'"'{sum += $1} END {print sum}'"'"'')
printf '%s\n' "$answer" > /answer/answer.txt
