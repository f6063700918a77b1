#!/bin/bash
# The oracle of terminal/text (csv-totals): a run must score 1.
set -euo pipefail
cd /app
mkdir -p /app/out
python3 - <<'EOF'
import csv, collections
totals = collections.defaultdict(int)
with open("/app/sales.csv", newline="") as f:
    for row in csv.DictReader(f):
        totals[row["region"]] += int(row["qty"]) * round(float(row["unit_price"]) * 100)
with open("/app/out/region_totals.tsv", "w") as f:
    for region in sorted(totals):
        f.write(f"{region}\t{totals[region] / 100:.2f}\n")
EOF
