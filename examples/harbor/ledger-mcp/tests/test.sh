#!/bin/bash
# The ledger the agent's tool calls left (/app, the task's artifact) must hold rent 1200
# and food 300, and nothing else.
mkdir -p /logs/verifier
python3 - <<'PY' > /logs/verifier/reward.txt
import json
try:
    ledger = json.load(open("/app/ledger.json"))
    got = sorted((entry["name"], entry["amount"]) for entry in ledger)
except (OSError, ValueError, KeyError, TypeError):
    got = None
print(1 if got == [("food", 300), ("rent", 1200)] else 0)
PY
