#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash
find problem_directory -type f | grep -Eo '"'"'\.\w+$'"'"' | tr '"'"'[:upper:]'"'"' '"'"'[:lower:]'"'"' | sort | uniq | wc -l')
printf '%s\n' "$answer" > /answer/answer.txt
