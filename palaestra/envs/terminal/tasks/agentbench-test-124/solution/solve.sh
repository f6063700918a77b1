#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash
printf "%.0f\n" $(($(du -sb --apparent-size experiment_folder | cut -f1) / 1024))')
printf '%s\n' "$answer" > /answer/answer.txt
