#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash

# Find the number of regular files and directories within exp_folder
file_count=$(find ~/exp_folder -type f | wc -l)
dir_count=$(find ~/exp_folder -type d | wc -l)

# Calculate and print the total count
total_count=$((file_count + dir_count))
echo $total_count')
printf '%s\n' "$answer" > /answer/answer.txt
