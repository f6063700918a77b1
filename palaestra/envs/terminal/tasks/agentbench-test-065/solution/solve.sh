#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash
sum=0
# Step 1: Find the files in the directory
files=$(find example_files -type f)

# Step 2-4: Loop through the files, filter lines with only integers and calculate the sum
for file in $files
do
  file_sum=$(cat "$file" | grep -E '"'"'^[0-9]+$'"'"' | awk '"'"'{s+=$1}END{print s}'"'"')
  sum=$((sum + file_sum))
done

# The output must contain only integers
echo $sum')
printf '%s\n' "$answer" > /answer/answer.txt
