"""Text processing: extract and aggregate fields of a generated CSV or access log into a file.

Checked by the output file's exact lines (trailing whitespace ignored); the expected lines
live only in the hidden check."""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Callable

from scripts.datasets.terminal.spec import TerminalTask, constants

FAMILY = "text"
PACKAGES = ("python3", "gawk", "jq", "bsdextrautils")
REGIONS = ("north", "south", "east", "west", "central", "coast", "delta", "highland")
PRODUCTS = ("anvil", "bolt", "crate", "dynamo", "easel", "flask", "gear", "hinge", "ink")

CHECK_LINES = """
got = read(OUTPUT)
if got is None:
    finish(False)
else:
    lines = [line.rstrip() for line in got.rstrip("\\n").split("\\n")]
    finish(lines == EXPECTED)
"""


def generate(rng: random.Random, difficulty: int) -> TerminalTask:
    """One text task: a CSV aggregation or an access-log top-k. (a kind drawn at random)."""
    return rng.choice(KINDS)(rng, difficulty)


def _csv_totals(rng: random.Random, difficulty: int) -> TerminalTask:
    rows = rng.randint(20, 40) * difficulty
    regions = rng.sample(REGIONS, 3 + difficulty)
    columns = ["id", "region", "product", "qty", "unit_price"]
    rng.shuffle(columns)
    totals: defaultdict[str, int] = defaultdict(int)
    lines = [",".join(columns)]
    for idx in range(rows):
        record = {
            "id": str(1000 + idx),
            "region": rng.choice(regions),
            "product": rng.choice(PRODUCTS),
            "qty": str(rng.randint(1, 50)),
            "unit_price": f"{rng.randint(1, 9999) / 100:.2f}",
        }
        cents = int(record["qty"]) * round(float(record["unit_price"]) * 100)
        totals[record["region"]] += cents
        lines.append(",".join(record[c] for c in columns))
    expected = [f"{region}\t{totals[region] / 100:.2f}" for region in sorted(totals)]
    output = "/app/out/region_totals.tsv"
    instruction = f"""\
`/app/sales.csv` is a CSV file with a header row (its columns are not in a fixed order).
Each row is a sale of `qty` items at `unit_price` each.

Write `{output}` (create the directory if needed): one line per region that appears in the
file, sorted by region name, each line the region, a TAB, and the region's total revenue
(the sum of qty * unit_price over its rows) with exactly two decimals. No header line.
"""
    solve = f"""\
mkdir -p /app/out
python3 - <<'EOF'
import csv, collections
totals = collections.defaultdict(int)
with open("/app/sales.csv", newline="") as f:
    for row in csv.DictReader(f):
        totals[row["region"]] += int(row["qty"]) * round(float(row["unit_price"]) * 100)
with open("{output}", "w") as f:
    for region in sorted(totals):
        f.write(f"{{region}}\\t{{totals[region] / 100:.2f}}\\n")
EOF
"""
    return TerminalTask(
        family=FAMILY,
        name="csv-totals",
        instruction=instruction,
        files={"/app/sales.csv": "\n".join(lines) + "\n"},
        check=constants(OUTPUT=output, EXPECTED=expected) + CHECK_LINES,
        solve=solve,
        packages=PACKAGES,
        difficulty=difficulty,
    )


def _log_top(rng: random.Random, difficulty: int) -> TerminalTask:
    hosts = [
        f"10.{rng.randint(0, 9)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}" for _ in range(12)
    ]
    paths = ["/", "/login", "/api/items", "/api/orders", "/static/app.js", "/health"]
    statuses = (200, 200, 200, 301, 404, 500)
    wanted_status = rng.choice((404, 500))
    k = 2 + difficulty
    lines = []
    counts: Counter[str] = Counter()
    weights = [rng.randint(1, 12) for _ in hosts]
    for minute in range(rng.randint(80, 140) * difficulty):
        host = rng.choices(hosts, weights)[0]
        status = rng.choice(statuses)
        if status == wanted_status:
            counts[host] += 1
        stamp = (
            f"27/Nov/2026:{minute // 60 % 24:02d}:{minute % 60:02d}:{rng.randint(0, 59):02d} +0000"
        )
        request = f"{rng.choice(('GET', 'POST'))} {rng.choice(paths)} HTTP/1.1"
        lines.append(f'{host} - - [{stamp}] "{request}" {status} {rng.randint(0, 9000)}')
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:k]
    expected = [f"{count} {host}" for host, count in ranked]
    output = "/app/report.txt"
    instruction = f"""\
`/app/access.log` is a web server log in the common log format.

Find the {k} client addresses that received the most responses with status {wanted_status}.
Write them to `{output}`, one per line, as `<count> <address>`, most first; break ties by
the address as a string, ascending. Nothing else in the file.
"""
    solve = f"""\
awk '$9 == {wanted_status} {{ n[$1]++ }} END {{ for (h in n) print n[h], h }}' /app/access.log \\
  | sort -k1,1nr -k2,2 | head -n {k} > {output}
"""
    return TerminalTask(
        family=FAMILY,
        name="log-top",
        instruction=instruction,
        files={"/app/access.log": "\n".join(lines) + "\n"},
        check=constants(OUTPUT=output, EXPECTED=expected) + CHECK_LINES,
        solve=solve,
        packages=PACKAGES,
        difficulty=difficulty,
    )


KINDS: tuple[Callable[[random.Random, int], TerminalTask], ...] = (_csv_totals, _log_top)
"""The task kinds, in the order ``generate`` cycles through them."""
