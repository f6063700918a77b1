#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash

cd ~
num_files_dirs=$(ls -l | grep -v '"'"'^d\|^\.'"'"' | wc -l)
num_non_empty_txt_files=$(find . -maxdepth 1 -name "*.txt" -type f -size +1c -printf '"'"'.'"'"' | wc -c)

result=$((num_files_dirs * num_non_empty_txt_files))
echo $result')
printf '%s\n' "$answer" > /answer/answer.txt
