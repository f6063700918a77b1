#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash
threshold_date=$(date -d "-30 days" +'"'"'%Y-%m-%d'"'"')
counter=0

for file in log_folder/*.txt; do
    file_date=$(basename "$file" | awk -F_ -vOFS='"'"'-'"'"' '"'"'{print $2}'"'"' | awk -F. -vOFS='"'"'-'"'"' '"'"'{print $1}'"'"')
    if [[ "$file_date" < "$threshold_date" || "$file_date" == "$threshold_date" ]]; then
        counter=$((counter + 1))
    fi
done

echo $counter')
printf '%s\n' "$answer" > /answer/answer.txt
