#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash
cd sample_files
grep -ohP '"'"'\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}'"'"' *.txt | sort | uniq | wc -l')
printf '%s\n' "$answer" > /answer/answer.txt
