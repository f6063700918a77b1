#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash

# Calculate the sum of all urgent task times
total_time=0
for file in employees/*.txt; do
  while read -r task; do
    time=$(echo $task | cut -d '"'"':'"'"' -f 2)
    total_time=$((total_time + time))
  done < <(grep '"'"'^urgent:'"'"' "${file}")
done

echo $total_time')
printf '%s\n' "$answer" > /answer/answer.txt
