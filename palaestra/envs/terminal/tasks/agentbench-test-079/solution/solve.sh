#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash
find ~/files_directory -iname '"'"'*.txt'"'"' -exec du -ck {} + | grep '"'"'total'"'"' | cut -f1')
printf '%s\n' "$answer" > /answer/answer.txt
