#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash

# Find and count the total number of files and directories in the given directory tree.
find ~/example_directory \( -type d -o -type f \) | wc -l')
printf '%s\n' "$answer" > /answer/answer.txt
