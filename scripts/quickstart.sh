#!/usr/bin/env bash
# The main job, from nothing: install, then collect verified rollouts of the built-in
# calculator tasks with the embedded local model (no API key, no GPU, no download at run time).
# The 135M model gets some right and some wrong; the summary gives the mean reward with its
# 95% interval, and `palaestra view runs/calculator.jsonl` shows each trajectory.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
.venv/bin/palaestra collect --env calculator --output runs/calculator.jsonl --overwrite "$@"
