#!/bin/bash
# The oracle of terminal/forensics (by-hash): a run must score 1.
set -euo pipefail
cd /app
find /app/data -type f -exec sha256sum {} + \
  | awk '$1 == "7af70b432d7aa7fa459d6113875bc603de0f83d81158ac69d13dbc6072d77423" {print $2}' > /app/answer.txt
