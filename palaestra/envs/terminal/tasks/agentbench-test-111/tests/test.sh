#!/bin/bash
# Runs the hidden checks on the machine the agent left; check.py writes the reward
# (/logs/verifier/reward.txt or reward.json), beside then moved.
set -euo pipefail
mkdir -p /logs/verifier
cd /
python3 /tests/check.py
