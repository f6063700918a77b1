#!/bin/bash
# The reward: the package's own tests. FAIL_TO_PASS must now pass and PASS_TO_PASS still pass.
# The test files are first restored from git's objects by hash (an edited test cannot pass).
# Written beside, then moved: a crashed check leaves no reward (an error, not 0).
set -uo pipefail
mkdir -p /logs/verifier
cd /testbed
reward=1
while read -r blob path; do
    if git cat-file blob "$blob" > "$path.restored" 2>/dev/null; then
        mv -f "$path.restored" "$path"
    else
        rm -f "$path.restored"
        echo "cannot restore $path from git object $blob: the repository was damaged"
        reward=0
    fi
done < <(python3 -c 'import json; [print(b, p) for p, b in json.load(open("/tests/config.json"))["test_files"].items()]')
if [ "$reward" = 1 ]; then
    python3 -c 'import json; c = json.load(open("/tests/config.json")); [print(n) for n in c["FAIL_TO_PASS"] + c["PASS_TO_PASS"]]' > /tmp/node_ids
    mapfile -t ids < /tmp/node_ids
    python3 -m pytest -p no:cacheprovider --rootdir=/testbed -q -rfE "${ids[@]}"
    status=$?
    [ "$status" = 0 ] || reward=0
fi
echo "$reward" > /logs/verifier/reward.txt.partial
mv /logs/verifier/reward.txt.partial /logs/verifier/reward.txt
