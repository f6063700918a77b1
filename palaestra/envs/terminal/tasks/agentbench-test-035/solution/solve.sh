#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
bash --login -c 'cd /home/agent && chgrp dataaccess /data && chmod 3770 /data'
