#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash

cd ~/txt_problem
find . -type f -name "*.txt" -exec wc -l {} \; | awk '"'"'{total += $1} END{print total}'"'"'')
printf '%s\n' "$answer" > /answer/answer.txt
