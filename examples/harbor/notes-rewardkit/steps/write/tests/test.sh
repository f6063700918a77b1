#!/bin/bash
# Harbor's Reward Kit scores /app by the criteria under /tests (one dimension per directory)
# and writes /logs/verifier/reward.json; reward.toml combines the dimensions into `reward`.
# The kit runs from the image's Python (not a command in /usr/local/bin), offline.
export LITELLM_LOCAL_MODEL_COST_MAP=True
python3 -m rewardkit /tests --workspace /app
