#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash
find /home/agent -mindepth 1 -maxdepth 2 -type d | wc -l')
printf '%s\n' "$answer" > /answer/answer.txt
