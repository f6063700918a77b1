#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash
count_dir1=$(find dir1 -iname "*.txt" -exec wc -l {} \; | awk '"'"'{s+=$1} END {print s}'"'"')
count_dir2=$(find dir2 -iname "*.txt" -exec wc -l {} \; | awk '"'"'{s+=$1} END {print s}'"'"')

total_count=$((count_dir1 + count_dir2))
echo "$total_count"')
printf '%s\n' "$answer" > /answer/answer.txt
