#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash
total_errors=0

for file in logs/*.txt
do
    count=$(grep -i -o "error" $file | wc -l)
    total_errors=$((total_errors + count))
done

echo $total_errors')
printf '%s\n' "$answer" > /answer/answer.txt
