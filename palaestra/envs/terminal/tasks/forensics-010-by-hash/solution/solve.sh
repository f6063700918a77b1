#!/bin/bash
# The oracle of terminal/forensics (by-hash): a run must score 1.
set -euo pipefail
cd /app
find /app/data -type f -exec sha256sum {} + \
  | awk '$1 == "dae1c86b284229fe1fe2993e0fec5e8caa528e0c10074e18c9f726c2bb440e13" {print $2}' > /app/answer.txt
