#!/bin/bash
# Step "write": /app/notes.txt (handed over from the agent's machine) is exactly "hello".
if [ "$(cat /app/notes.txt 2>/dev/null)" = hello ]; then reward=1; else reward=0; fi
printf '{"reward": %s}\n' "$reward" > /logs/verifier/reward.json
