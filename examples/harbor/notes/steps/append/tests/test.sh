#!/bin/bash
# Step "append": the two lines, and the collect hook's listing names the file.
if [ "$(cat /app/notes.txt 2>/dev/null)" = "$(printf 'hello\nworld')" ]; then lines=1; else lines=0; fi
if grep -qx notes.txt /logs/artifacts/listing.txt 2>/dev/null; then listed=1; else listed=0; fi
reward=$(( lines * listed ))
printf '{"reward": %s, "lines": %s, "listed": %s}\n' "$reward" "$lines" "$listed" \
    > /logs/verifier/reward.json
