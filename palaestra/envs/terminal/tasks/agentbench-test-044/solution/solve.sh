#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash
find /home/user/experiment -type f -exec stat -c "%s" {} \; | awk '"'"'{total+=$1} END {print total}'"'"'')
printf '%s\n' "$answer" > /answer/answer.txt
