#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash
find problem_folder/ -type f \( \
    \( -iname '"'"'*.txt'"'"' -exec stat -c"%s" {} \; \) -o \
    \( -iname '"'"'*.jpg'"'"' -exec stat -c"%s" {} \; \) -o \
    \( -iname '"'"'*.png'"'"' -exec stat -c"%s" {} \; \) \) \
    | awk '"'"'{sum += $1} END {print sum}'"'"'')
printf '%s\n' "$answer" > /answer/answer.txt
