#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash

# Change the working directory to target_directory
cd target_directory

# Run the grep command to search for the word '"'"'linux'"'"' (case insensitive) and count occurrences using wc -l
grep -i -o -r '"'"'linux'"'"' . --include='"'"'*.txt'"'"' | wc -l')
printf '%s\n' "$answer" > /answer/answer.txt
