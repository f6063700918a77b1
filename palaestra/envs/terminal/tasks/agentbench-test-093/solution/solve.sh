#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash
cd test_directory
characters=$(find . -name "*.txt" -exec wc -m {} \; | awk '"'"'{s+=$1} END {print s}'"'"')
words=$(find . -name "*.txt" -exec wc -w {} \; | awk '"'"'{s+=$1} END {print s}'"'"')
lines=$(find . -name "*.txt" -exec wc -l {} \; | awk '"'"'{s+=$1} END {print s}'"'"')
folders=$(find . -type d | wc -l)

total=$((characters + words + lines + folders))
echo $total')
printf '%s\n' "$answer" > /answer/answer.txt
