#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash

# Function to count log files for the given month
function count_log_files () {
  input_month=$1
  find logs -type f -name "*$input_month*.log" | grep -E "^logs/[0-9]{4}\-[0-9]{2}\-[0-9]{2}\.log$" | wc -l
}

# Set input_month as '"'"'2021-01'"'"' for demonstration 
input_month="2021-01"

# Call the function
count_log_files $input_month')
printf '%s\n' "$answer" > /answer/answer.txt
