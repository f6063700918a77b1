#!/bin/bash
# Runs the hidden checks on the machine the agent left; check.py writes the reward
# (/logs/verifier/reward.txt or reward.json), beside then moved. Python runs isolated (-I: no
# PYTHON* variables, no user site-packages) and without site (-S: no .pth, no sitecustomize).
set -euo pipefail
cd /
exec /usr/bin/python3 -I -S /tests/check.py
