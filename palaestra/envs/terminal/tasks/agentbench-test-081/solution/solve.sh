#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash

# Read the word to search from the file
search_word=$(cat search-word.txt)

# Use grep to search for the word in the files,
# count occurrences in each file,
# sum the occurrences using awk
# and display the result.

grep -c "$search_word" file{1..3}.txt | awk -F: '"'"'{sum += $2} END {print sum}'"'"'')
printf '%s\n' "$answer" > /answer/answer.txt
