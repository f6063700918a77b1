"""How fast ``palaestra view`` opens a large run: 100,000 rows, from the command to a table.

    .venv/bin/python benchmarks/viewer.py [--rows 100000] [--tries 3]

Writes a run of ``--rows`` rollouts (1 in 50 a failure, rows of about 1.4 kB, as the viewer's
tests build them), then, per try: starts ``palaestra view`` as a user does, waits for its URL,
and times the first ``/api/runs`` and ``/api/rows`` answers (what the page needs to draw the
summary and the first page of the table); then a sorted and filtered page, a text search over
every row, and one rollout. Prints the medians and writes ``benchmarks/results/viewer.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.viewer.rows import big_run  # noqa: E402


def fetch(url: str) -> float:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as answer:
        answer.read()
    return time.perf_counter() - started


def one_try(path: Path) -> dict[str, float]:
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "palaestra", "view", str(path), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        listening = time.perf_counter() - started
        base = line.split()[2].rstrip("/")
        runs = fetch(f"{base}/api/runs")
        rows = fetch(f"{base}/api/rows?limit=100")
        table = time.perf_counter() - started
        return {
            "command_to_listening_s": listening,
            "command_to_first_table_page_s": table,
            "summary_s": runs,
            "first_page_s": rows,
            "sorted_filtered_page_s": fetch(
                f"{base}/api/rows?sort=tokens&order=desc&reward_min=0.5&offset=500&limit=100"
            ),
            "text_search_s": fetch(f"{base}/api/rows?q=paris&kind=failed"),
            "one_rollout_s": fetch(f"{base}/api/rollout/54321"),
        }
    finally:
        process.terminate()
        process.wait(timeout=15)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--tries", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = big_run(Path(folder) / "big.jsonl", args.rows)
        size = path.stat().st_size + path.with_name("big_failures.jsonl").stat().st_size
        tries = [one_try(path) for _ in range(args.tries)]
    medians = {key: statistics.median(t[key] for t in tries) for key in tries[0]}
    result = {"rows": args.rows, "bytes": size, "tries": args.tries, "median": medians}
    print(f"palaestra view on {args.rows:,} rows ({size / 1e6:.0f} MB), median of {args.tries}:")
    for key, value in medians.items():
        print(f"  {key:32} {value * 1000:9.1f} ms")
    out = ROOT / "benchmarks" / "results" / "viewer.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
