#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash
# Run the find command to locate files and pipe the output to wc -l command to count the files
find test_directory -type f | wc -l')
printf '%s\n' "$answer" > /answer/answer.txt
