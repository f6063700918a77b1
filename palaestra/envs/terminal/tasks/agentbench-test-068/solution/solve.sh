#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash
find ~ . -mindepth 1 -maxdepth 1 -type d -name '"'"'.*'"'"' -exec realpath {} + | sort -u | wc -l')
printf '%s\n' "$answer" > /answer/answer.txt
