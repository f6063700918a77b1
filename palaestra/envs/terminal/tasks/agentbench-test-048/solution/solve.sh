#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash

cd task_directory

# Get octal file permissions, extract the integer part, add them up
sum=0
for file in *
do
  octal=$(stat -c '"'"'%a'"'"' "$file")
  sum=$((sum + octal))
done

# Print the sum
echo $sum')
printf '%s\n' "$answer" > /answer/answer.txt
