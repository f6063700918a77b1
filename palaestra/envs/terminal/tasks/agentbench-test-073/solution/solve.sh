#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash
cd files
sum=0
# Read all files in folder
for file in $(ls) ; 
do
        # Extract integers from each file and add them to the sum
        for number in $(grep -o -E '"'"'[-+]?[0-9]+'"'"' $file) ; 
        do
                sum=$(($sum + $number))
        done
done
# Print the total sum of integers
echo $sum')
printf '%s\n' "$answer" > /answer/answer.txt
