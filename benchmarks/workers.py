"""``--workers N`` against the in-process path: CPU per rollout, side by side (issue 15 §2).

The weather task (seed → model → tool → model → verify) against the instant mock model
(``mock_model.py``, its own process, never counted), collected by ``palaestra collect`` in
process, with ``--workers 1`` and with ``--workers 2``. Each command's CPU comes from
``wait4`` (the collector and the worker processes it reaped), so it includes interpreter
start-up and each worker's imports; running every configuration at two sizes and taking the
difference leaves the CPU per rollout alone (and the start-up as what is left at the small
size). The configurations alternate within each round, so the load of the shared machine
falls on all of them alike; the figure is the median over the rounds.

``--workers 1`` is the in-process path by construction (no process is started), so it should
cost the same; ``--workers 2`` adds what crosses the pipe per rollout (the task out, the result
back, both orjson) on top of two event loops. On a 2-core machine it cannot show a gain.

Run from the repository root: ``.venv/bin/python benchmarks/workers.py [--quick] [--write]``
(``--write``: ``benchmarks/results/workers.md``).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from procs import run_measured  # noqa: E402
from run import CONCURRENCY, Mock, count_lines, load, palaestra_collect, write_tasks  # noqa: E402

CONFIGS: dict[str, list[str]] = {
    "in process": [],
    "--workers 1": ["--workers", "1"],
    "--workers 2": ["--workers", "2"],
}
RESULT = HERE / "results" / "workers.md"


def measure(sizes: tuple[int, int], rounds: int) -> dict[str, dict[str, float]]:
    small, large = sizes
    cpu: dict[tuple[str, int], list[float]] = {}
    wall: dict[str, list[float]] = {}
    mock = Mock()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            tasks = {n: write_tasks(folder / f"tasks_{n}.jsonl", n) for n in sizes}
            for round_ in range(rounds):
                for n in sizes:
                    for name, flags in CONFIGS.items():
                        out = folder / "out.jsonl"
                        command = palaestra_collect(tasks[n], out, mock.url, CONCURRENCY)
                        finished = run_measured([*command, *flags], cwd=HERE.parent)
                        written = count_lines(out)
                        if finished.returncode != 0 or written != n:
                            raise SystemExit(
                                f"{name} N={n}: exit {finished.returncode}, {written}/{n} rows\n"
                                f"{finished.stderr[-2000:]}"
                            )
                        cpu.setdefault((name, n), []).append(finished.cpu)
                        if n == large:
                            wall.setdefault(name, []).append(n / finished.wall)
                        print(
                            f"round {round_ + 1} {name:12} N={n:5}: {finished.cpu:6.2f} s CPU, "
                            f"{n / finished.wall:6.0f} rollouts/s",
                            file=sys.stderr,
                        )
    finally:
        mock.stop()
    figures: dict[str, dict[str, float]] = {}
    for name in CONFIGS:
        per_rollout = [
            (big - little) / (large - small)
            for little, big in zip(cpu[(name, small)], cpu[(name, large)], strict=True)
        ]
        each = statistics.median(per_rollout)
        figures[name] = {
            "cpu_ms_per_rollout": each * 1000,
            "spread_ms": (max(per_rollout) - min(per_rollout)) * 1000,
            "startup_cpu_s": statistics.median(cpu[(name, small)]) - small * each,
            "rollouts_per_s": statistics.median(wall[name]),
        }
    return figures


def report(figures: dict[str, dict[str, float]], sizes: tuple[int, int], rounds: int) -> str:
    base = figures["in process"]["cpu_ms_per_rollout"]
    lines = [
        "# `--workers N` against the in-process path",
        "",
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `benchmarks/workers.py` on "
        f"{os.cpu_count()} cores ({platform.processor() or platform.machine()}), Python "
        f"{platform.python_version()}, load {load()[0]:.2f}. The weather task against the "
        f"instant mock model, concurrency {CONCURRENCY}; CPU of the collector and its worker "
        f"processes (wait4), per rollout from N = {sizes[0]:,} and {sizes[1]:,} differenced "
        f"(start-up left out), median of {rounds} alternating rounds.",
        "",
        "| collect | CPU ms per rollout | ratio to in process | spread (max - min) | start-up CPU "
        "| rollouts/s at N = " + f"{sizes[1]:,} |",
        "|---|---|---|---|---|---|",
    ]
    for name, row in figures.items():
        lines.append(
            f"| {name} | {row['cpu_ms_per_rollout']:.3f} | "
            f"{row['cpu_ms_per_rollout'] / base:.2f} | {row['spread_ms']:.3f} | "
            f"{row['startup_cpu_s']:.2f} s | {row['rollouts_per_s']:.0f} |"
        )
    lines += [
        "",
        "`--workers 1` runs in process (no worker is started), so it costs what the in-process "
        "path costs; the difference between the two rows is the machine's noise. `--workers 2` "
        "adds, per rollout, the task and the result crossing a socket as orjson in both "
        "directions and a second event loop; the start-up column adds the two workers' "
        "interpreters and imports. On this 2-core machine the collector, both workers and the "
        "mock model share the cores, so two workers cannot be faster; on a many-core machine "
        "they spread the rollouts' CPU (environment code, verification, the HTTP client) over "
        "N cores while one process writes.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller N, two rounds")
    parser.add_argument("--write", action="store_true", help=f"write {RESULT}")
    args = parser.parse_args()
    sizes, rounds = ((300, 1500), 2) if args.quick else ((1000, 5000), 3)
    text = report(measure(sizes, rounds), sizes, rounds)
    print(text)
    if args.write:
        RESULT.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
