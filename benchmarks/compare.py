"""Before/after: the in-process weather rollout of two checkouts, interleaved, side by side.

The suite (``run.py``) measures one checkout against NeMo Gym and the floors; this answers the
question a change to the hot path must answer — did CPU per rollout move? — by running the same
``palaestra collect --env weather`` against the same instant mock model for a base checkout and
this one, alternating A B A B, and reporting each try and the median ratio::

    git worktree add /tmp/base <rev>
    .venv/bin/python benchmarks/compare.py /tmp/base --n 5000 --tries 5

The base checkout runs on this venv's packages with its own ``palaestra`` first on the path, so
both sides share every dependency. On a shared 2-core machine single tries move by ±20%, and a
few per cent cannot be told from noise that way (a checkout compared with a copy of itself read
1.07x once). ``--instructions`` counts CPU instructions instead, with valgrind's callgrind
(``apt-get install valgrind``): ``(count at N2 - count at N1) / (N2 - N1)`` per rollout, start-up
differenced out, in the main thread (where the event loop runs every rollout; the progress
bar's refresh thread works by the clock, not by the rollout); repeat runs agree within 1%::

    .venv/bin/python benchmarks/compare.py /tmp/base --instructions

``--served`` compares the served path instead (collector, agent server, env server, the mock),
run in one process by ``served_one_process.py`` so that its CPU is not that of four processes
on two shared cores: CPU per rollout within about 3% on a quiet machine, or with
``--instructions`` user-space instructions (cachegrind) within 0.3%::

    .venv/bin/python benchmarks/compare.py /tmp/base --served [--instructions]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
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
    parser.add_argument(
        "--instructions", action="store_true", help="count instructions (callgrind) instead"
    )
    parser.add_argument("--served", action="store_true", help="the served path, in one process")
    args = parser.parse_args()
    sides = {"base": args.base.resolve(), "this": HERE.parent}
    if args.served:
        served(sides, args.n, args.tries, args.instructions)
        return
    if args.instructions:
        instructions(sides)
        return
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


def instructions(sides: dict[str, Path], small: int = 500, large: int = 2500) -> None:
    """Instructions per rollout of each side, start-up differenced out: the main thread's (the
    event loop's, where every rollout runs), and the whole process's.

    Only the first is the figure to compare. The other threads' work is timed, not per
    rollout: rich's progress bar rebuilds its table ten times a second of wall-clock time in a
    thread of its own, and under valgrind a rollout lasts ~50 times longer, so that thread
    adds 20-30% to the whole count, more when the machine is busier (the whole count of
    83510e9 read 676k, 829k and 853k instructions per rollout on different days and loads;
    its main thread 653,149 and 651,844 in two runs an hour apart, under load 9)."""
    per_rollout: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as scratch, mock_model() as mock:
        root = Path(scratch)
        tasks = {n: write_tasks(root / f"tasks-{n}.jsonl", n) for n in (small, large)}
        for name, checkout in sides.items():
            counts: dict[int, tuple[int, int]] = {}
            for n in (small, large):
                out = root / f"cg-{name}-{n}.out"
                command = [
                    *("valgrind", "--tool=callgrind", "--separate-threads=yes"),
                    f"--callgrind-out-file={out}",
                    *palaestra_collect(tasks[n], root / "out.jsonl", mock.url, CONCURRENCY),
                ]
                env = {**os.environ, "PYTHONPATH": str(checkout)}
                done = subprocess.run(
                    command, env=env, cwd=checkout, capture_output=True, text=True
                )
                found = re.search(r"Collected : (\d+)", done.stderr)
                main_thread = _thread_total(Path(f"{out}-01"))
                if found is None or main_thread is None:
                    raise SystemExit(f"{name}: callgrind printed no count:\n{done.stderr[-1500:]}")
                counts[n] = (main_thread, int(found.group(1)))
            main = (counts[large][0] - counts[small][0]) / (large - small)
            whole = (counts[large][1] - counts[small][1]) / (large - small)
            per_rollout[name] = main
            print(
                f"  {name}: {main:,.0f} instructions per rollout in the main thread "
                f"({whole:,.0f} in the whole process)",
                flush=True,
            )
    print(f"  this / base (main thread): {per_rollout['this'] / per_rollout['base']:.3f}x")


def _thread_total(path: Path) -> int | None:
    """The instruction total of one thread's callgrind file (``--separate-threads``)."""
    if not path.exists():
        return None
    found = re.search(rb"^(?:totals|summary): (\d+)", path.read_bytes(), re.MULTILINE)
    return int(found.group(1)) if found else None


def served(sides: dict[str, Path], n: int, tries: int, count: bool) -> None:
    """The served path of each side in one process: CPU us per rollout (the best collection of
    each try, tries interleaved), or instructions per rollout (two sizes, differenced)."""
    harness = [sys.executable, str(HERE / "served_one_process.py")]

    def run(checkout: Path, size: int, reps: int, wrapper: list[str]) -> str:
        env = {**os.environ, "PYTHONPATH": str(checkout)}
        done = subprocess.run(
            [*wrapper, *harness, str(size), str(reps)],
            env=env,
            cwd=tempfile.gettempdir(),  # not a checkout: palaestra comes from PYTHONPATH
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise SystemExit(f"{checkout}: the served harness failed:\n{done.stderr[-1500:]}")
        return done.stdout + done.stderr

    figures: dict[str, list[float]] = {name: [] for name in sides}
    if count:
        cachegrind = ["valgrind", "--tool=cachegrind", "--cache-sim=no"]
        cachegrind.append("--cachegrind-out-file=/dev/null")
        small, large = n // 4, n // 4 + n
        for name, checkout in sides.items():
            refs = []
            for size in (small, large):
                found = re.search(r"I\s+refs:\s+([\d,]+)", run(checkout, size, 1, cachegrind))
                if found is None:
                    raise SystemExit(f"{name}: valgrind printed no instruction count")
                refs.append(int(found.group(1).replace(",", "")))
            figures[name].append((refs[1] - refs[0]) / (2 * n))  # a warm-up and one run each
            print(f"  {name}: {figures[name][0]:,.0f} instructions per rollout", flush=True)
    else:
        for attempt in range(tries):
            for name, checkout in sides.items():
                best = min(float(x) for x in run(checkout, n, 3, []).split())
                figures[name].append(best)
                print(f"  try {attempt + 1} {name}: {best:.1f} us CPU per rollout", flush=True)
    ratio = statistics.median(figures["this"]) / statistics.median(figures["base"])
    print(f"  served, one process, N={n}: this / base {ratio:.3f}x")


if __name__ == "__main__":
    main()
