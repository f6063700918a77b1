#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash
is_prime() {
  number=$1
  if ((number <= 1)); then
    return 1
  elif ((number == 2)); then
    return 0
  else
    for ((i = 2; i * i <= number; i++)); do
      if ((number % i == 0)); then
        return 1
      fi
    done
    return 0
  fi
}

limit_date=$(date --date="7 days ago" +%Y-%m-%d)
total_sum=0

for file in log_files/*.txt; do
  name=$(basename "${file}")
  server_id=$(echo "${name}" | awk -F_ '"'"'{print $3}'"'"')
  file_date=$(echo "${name%.txt}" | awk -F_ '"'"'{print $NF}'"'"')

  is_prime ${server_id}
  result=$?

  # Check if server id is prime (result equals to 0) and if file date is within the last 7 days.
  if [[ ${result} -eq 0 && ${file_date} > ${limit_date} ]]; then
    sum=$(awk '"'"'{s+=$1} END {print s}'"'"' "${file}")
    total_sum=$((total_sum + sum ))
  fi
done

echo ${total_sum}')
printf '%s\n' "$answer" > /answer/answer.txt
