#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash
find /var/log -type f -exec du -k {} + | awk '"'"'{sum += $1} END {print sum}'"'"'')
printf '%s\n' "$answer" > /answer/answer.txt
