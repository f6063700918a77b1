#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash
cd test_directory
total_files=$(find . -type f -or -type d | wc -l)
total_size=$(find . -type f -exec stat -c"%s" {} \; | awk '"'"'{sum+=$1} END {print int(sum/1024)}'"'"')
result=$((total_files + total_size))
echo "$result"')
printf '%s\n' "$answer" > /answer/answer.txt
