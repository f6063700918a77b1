#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash
find /home/student/files -type f -name "*.txt" -exec wc -l {} \; | awk '"'"'{SUM += $1} END {print SUM}'"'"'')
printf '%s\n' "$answer" > /answer/answer.txt
