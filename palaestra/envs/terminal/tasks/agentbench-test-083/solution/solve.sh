#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash

cd ~/assignment
total_count=0

for file in *.txt; do
    count=$(grep -io "Linux" "$file" | wc -l)
    total_count=$((total_count + count))
done

echo $total_count')
printf '%s\n' "$answer" > /answer/answer.txt
