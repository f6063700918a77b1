#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash

# Initialize the sum
sum=0

# Calculate the sum of odd indexed files
for i in {1..100..2}; do
  num=$(cat ~/file_analysis/file-$i.txt)
  sum=$((sum + num))
done

# Output the sum as a single integer
echo $sum')
printf '%s\n' "$answer" > /answer/answer.txt
