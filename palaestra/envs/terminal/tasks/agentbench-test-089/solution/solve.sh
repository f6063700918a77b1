#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash
# Create the directory structure
mkdir -p ~/StudentFiles/Class{A,B,C}/{Project1,Project2,Project3}

# Count the number of directories created (including main StudentFiles directory)
find ~/StudentFiles -type d | wc -l')
printf '%s\n' "$answer" > /answer/answer.txt
