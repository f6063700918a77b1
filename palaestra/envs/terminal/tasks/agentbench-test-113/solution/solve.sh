#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
answer=$(bash --login -c 'cd /home/agent && #!/bin/bash

# Count the total number of lines across all log files and output the result
find log_files -name '"'"'*.log'"'"' -exec wc -l {} \; | awk '"'"'{ total += $1 } END {print total}'"'"'')
printf '%s\n' "$answer" > /answer/answer.txt
