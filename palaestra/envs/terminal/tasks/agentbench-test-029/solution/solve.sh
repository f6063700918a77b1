#!/bin/bash
# The oracle: AgentBench's example solution.
set -uo pipefail
printf '%s\n' a3b0c7 > /answer/answer.txt
