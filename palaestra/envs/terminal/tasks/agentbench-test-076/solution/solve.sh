#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash
find . -type f \( -iname \*.c -o -iname \*.h \) -exec wc -l {} \; | awk '"'"'{total_lines += $1} END {print total_lines}'"'"'')
printf '%s\n' "$answer" > /answer/answer.txt
