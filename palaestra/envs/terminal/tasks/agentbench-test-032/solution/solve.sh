#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
bash --login -c 'cd /home/agent && find ~/videos -type f -exec chmod 660 {} + && find ~/videos -type d -exec chmod 750 {} +'
