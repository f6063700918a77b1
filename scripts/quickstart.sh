#!/usr/bin/env bash
# The main job, from nothing: install, then collect verified rollouts of the built-in
# weather tasks with the embedded local model (no API key, no GPU, no download at run time).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
.venv/bin/palaestra collect --env weather --output runs/weather.jsonl --overwrite "$@"
