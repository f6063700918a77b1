#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
bash --login -c 'cd /home/agent && chmod u-s /home/agent/bin/find'
