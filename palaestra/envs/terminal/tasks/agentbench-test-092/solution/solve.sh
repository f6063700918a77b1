#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && # Create directories
mkdir -p parentDir/level1_{A,B,C}/{level2_1,level2_2}

# Navigate into the parent directory
cd parentDir

# Count the total number of directories
find . -type d | wc -l')
printf '%s\n' "$answer" > /answer/answer.txt
