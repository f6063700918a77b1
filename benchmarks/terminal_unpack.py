"""terminal's shipped archive: what its first use costs (unpacking it), and every later one.

Each run starts a fresh process with an empty cache (``XDG_CACHE_HOME`` a new directory), so
it pays what the first use on a machine pays: ``unpacked`` reads the archive, hashes it,
decompresses it and writes its files; then a second call (the folder found under the
archive's digest). Wall and CPU time of each, in the process (interpreter start-up and
imports not counted), ``--runs`` times; the median and the range. The archive's and the
unpacked folder's sizes.

Run: ``python benchmarks/terminal_unpack.py [--runs 5]``; writes
``benchmarks/results/terminal_unpack.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from palaestra.envs.terminal.environment import ARCHIVE

RESULTS = Path(__file__).parent / "results" / "terminal_unpack.md"
ONE_RUN = """
import json, os, time
from palaestra.environment.kinds.harbor.tasks import unpacked
from palaestra.envs.terminal.environment import ARCHIVE
wall, cpu = time.perf_counter(), time.process_time()
home = unpacked(ARCHIVE)
cold = (time.perf_counter() - wall, time.process_time() - cpu)
wall, cpu = time.perf_counter(), time.process_time()
unpacked(ARCHIVE)
warm = (time.perf_counter() - wall, time.process_time() - cpu)
sizes = [p.stat().st_size for p in home.rglob("*") if p.is_file()]
print(json.dumps({"cold": cold, "warm": warm, "files": len(sizes), "bytes": sum(sizes)}))
"""


@dataclass(frozen=True)
class Run:
    cold_wall: float
    cold_cpu: float
    warm_wall: float
    files: int
    size: int


def one_run() -> Run:
    with tempfile.TemporaryDirectory(prefix="palaestra-unpack-") as cache:
        done = subprocess.run(
            [sys.executable, "-c", ONE_RUN],
            env={**os.environ, "XDG_CACHE_HOME": cache},
            capture_output=True,
            text=True,
            check=True,
        )
    answer = json.loads(done.stdout)
    cold, warm = answer["cold"], answer["warm"]
    return Run(cold[0], cold[1], warm[0], int(answer["files"]), int(answer["bytes"]))


def spread(seconds: list[float], suffix: str) -> str:
    shown = [value * 1000 for value in seconds]
    return (
        f"median {statistics.median(shown):.1f} {suffix} "
        f"(range {min(shown):.1f}-{max(shown):.1f} {suffix}, {len(shown)} runs)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    runs = [one_run() for _ in range(args.runs)]
    load = os.getloadavg()
    lines = [
        "# terminal: unpacking the shipped archive",
        "",
        f"Python {platform.python_version()}; {platform.machine()}, {os.cpu_count()} cores "
        f"shared with other jobs (load average {load[0]:.1f} at the end); "
        f"`python benchmarks/terminal_unpack.py --runs {args.runs}`",
        "",
        f"- archive: {ARCHIVE.stat().st_size:,} bytes; unpacked: {runs[0].files:,} files, "
        f"{runs[0].size:,} bytes",
        f"- first use, wall: {spread([run.cold_wall for run in runs], 'ms')}",
        f"- first use, CPU: {spread([run.cold_cpu for run in runs], 'ms')}",
        f"- later uses, wall: {spread([run.warm_wall for run in runs], 'ms')}",
        "",
    ]
    RESULTS.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
