#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash

# Count directories, subdirectories and files, excluding problem_directory itself
find problem_directory -mindepth 1 | wc -l')
printf '%s\n' "$answer" > /answer/answer.txt
