#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
bash --login -c 'cd /home/agent && bash /solution/example/0.sh'
