"""Before/after: the in-process weather rollout of two checkouts, interleaved, side by side.

The suite (``run.py``) measures one checkout against NeMo Gym and the floors; this answers the
question a change to the hot path must answer — did CPU per rollout move? — by running the same
``palaestra collect --env weather`` against the same instant mock model for a base checkout and
this one, alternating A B A B, and reporting each try and the median ratio::

    git worktree add /tmp/base <rev>
    .venv/bin/python benchmarks/compare.py /tmp/base --n 5000 --tries 5

The base checkout runs on this venv's packages with its own ``palaestra`` first on the path, so
both sides share every dependency. On a shared 2-core machine single tries move by ±20%; the
ratio of medians over interleaved tries is the figure to quote.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import (  # noqa: E402  (the suite's helpers, beside this file)
    CONCURRENCY,
    Json,
    measured_run,
    mock_model,
    palaestra_collect,
    write_tasks,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("base", type=Path, help="a checkout of the base revision")
    parser.add_argument("--n", type=int, default=5000, help="rollouts per try")
    parser.add_argument("--tries", type=int, default=5, help="interleaved tries per side")
    args = parser.parse_args()
    sides = {"base": args.base.resolve(), "this": HERE.parent}
    cpu: dict[str, list[float]] = {name: [] for name in sides}
    steady: dict[str, list[float]] = {name: [] for name in sides}
    with tempfile.TemporaryDirectory() as scratch, mock_model() as mock:
        root = Path(scratch)
        tasks = write_tasks(root / "tasks.jsonl", args.n)
        for attempt in range(args.tries):
            for name, checkout in sides.items():
                out = root / f"{name}-{attempt}.jsonl"
                env = {**os.environ, "PYTHONPATH": str(checkout)}
                row: Json = measured_run(
                    f"{name} in-process",
                    palaestra_collect(tasks, out, mock.url, CONCURRENCY),
                    args.n,
                    mock,
                    env=env,
                    output=out,
                    cwd=checkout,
                    timeout=max(120, args.n / 50),
                )
                if "error" in row:
                    raise SystemExit(f"{name}: {row['error']}")
                cpu[name].append(row["whole_cpu_ms_per_rollout"])
                if row["steady"]:
                    steady[name].append(row["steady"]["cpu_ms_per_rollout"])
    print(f"\nweather, in process, N={args.n}, concurrency {CONCURRENCY}, {args.tries} tries")
    for label, figures in (("whole command", cpu), ("steady", steady)):
        for name, values in figures.items():
            tries = ", ".join(f"{v:.3f}" for v in values)
            print(f"  {label:13} {name}: median {statistics.median(values):.3f} ms ({tries})")
        ratio = statistics.median(figures["this"]) / statistics.median(figures["base"])
        print(f"  {label:13} this / base: {ratio:.2f}x")


if __name__ == "__main__":
    main()
