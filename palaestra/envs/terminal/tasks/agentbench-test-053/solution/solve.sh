#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash
find experiment_directory -mindepth 1 -maxdepth 1 -not -name '"'"'.*'"'"' | wc -l')
printf '%s\n' "$answer" > /answer/answer.txt
