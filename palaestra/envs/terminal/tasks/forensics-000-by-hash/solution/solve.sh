#!/bin/bash
# The oracle of terminal/forensics (by-hash): a run must score 1.
set -euo pipefail
cd /app
find /app/data -type f -exec sha256sum {} + \
  | awk '$1 == "ddcd916a6962141859775e55d675fa0a84e3573c18b48a51ca4e054f9a6ca91c" {print $2}' > /app/answer.txt
