#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash
cd files
max_sum=0
for file in *
do
  sum=$(awk -F '"'"','"'"' '"'"'{for (i=1; i<=NF; ++i) total+=$i} END {print total}'"'"' $file)
  if [ $sum -gt $max_sum ]
  then
    max_sum=$sum
  fi
done

echo $max_sum')
printf '%s\n' "$answer" > /answer/answer.txt
