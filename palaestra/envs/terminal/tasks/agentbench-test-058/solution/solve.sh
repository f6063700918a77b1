#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash

cd student_data

sum_math_scores=0
sum_science_scores=0
sum_english_scores=0
total_students=0

for file in *.txt; do
  math_score=$(awk '"'"'{print $2}'"'"' "$file")
  science_score=$(awk '"'"'{print $3}'"'"' "$file")
  english_score=$(awk '"'"'{print $4}'"'"' "$file")
  
  sum_math_scores=$((sum_math_scores + math_score))
  sum_science_scores=$((sum_science_scores + science_score))
  sum_english_scores=$((sum_english_scores + english_score))
  total_students=$((total_students + 1))
done

avg_math_score=$((sum_math_scores / total_students))
avg_science_score=$((sum_science_scores / total_students))
avg_english_score=$((sum_english_scores / total_students))

sum_avg_scores=$((avg_math_score + avg_science_score + avg_english_score))
echo $sum_avg_scores')
printf '%s\n' "$answer" > /answer/answer.txt
