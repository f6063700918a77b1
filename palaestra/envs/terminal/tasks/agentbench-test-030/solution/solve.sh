#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
bash --login -c 'cd /home/agent && groupadd tmp && usermod -a -G tmp jack && usermod -a -G tmp bill && usermod -a -G tmp tom && chmod 640 /testfile && chgrp tmp /testfile'
