"""The rootfs provider's costs (issue 26): build, start, an episode, teardown, leftovers.

1. ``build``: a small Dockerfile (base, RUN, COPY, WORKDIR, ENV, USER) cold (base unpacked,
   every step run) and cached (nothing run).
2. ``episode``: start a box, run ``true`` in it, close it; p50/p99 of each part and
   episodes per second, one at a time and ``--concurrency`` at once.
3. ``floor``: bubblewrap alone running ``true`` over an already mounted box root.
4. ``written``: bytes a start writes (copy-on-write: none), and ``leftovers`` after the runs
   (mounts, directories, leases under the runtime dir).

Run as root from the repository root:
``.venv/bin/python benchmarks/machines_rootfs.py --base BASE.tar [--episodes 200] [--write]``.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from palaestra.sandbox.limits import Limits
from palaestra.sandbox.machines.provider import BoxSpec, Image
from palaestra.sandbox.machines.rootfs import RootfsBox, RootfsProvider
from palaestra.sandbox.process import supervise

DOCKERFILE = """\
FROM debian:bookworm-slim
RUN useradd -m agent && echo built > /built.txt
COPY app.py /app/
WORKDIR /app
ENV MODE=bench
USER agent
"""
SPEC = BoxSpec(memory_mb=512)


def percentiles(values: list[float]) -> str:
    ordered = sorted(values)
    p50 = statistics.median(ordered)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms"


async def episode(provider: RootfsProvider, image: Image) -> tuple[float, float, float]:
    started = time.perf_counter()
    box = await provider.start(image, SPEC)
    up = time.perf_counter()
    process = await box.launch(["true"], stdin=subprocess.DEVNULL)
    await supervise(process, Limits(wall_time=30))
    process.close()
    ran = time.perf_counter()
    await box.close()
    return up - started, ran - up, time.perf_counter() - ran


async def main(base: Path, episodes: int, concurrency: int) -> list[str]:
    cache = Path(tempfile.mkdtemp(prefix="palaestra-bench-rootfs-"))
    runtime = Path(tempfile.mkdtemp(prefix="palaestra-bench-boxes-"))
    runtime.chmod(0o711)
    context = Path(tempfile.mkdtemp(prefix="palaestra-bench-context-"))
    (context / "Dockerfile").write_text(DOCKERFILE)
    (context / "app.py").write_text("print('app')\n")
    lines = []
    try:
        provider = RootfsProvider(cache=cache, runtime=runtime, base=lambda: base)
        began = time.perf_counter()
        image = await provider.build(context)
        cold = time.perf_counter() - began
        began = time.perf_counter()
        await provider.build(context)
        cached = time.perf_counter() - began
        lines.append(
            f"build: cold {cold:.2f} s ({provider.steps_run} steps), cached {cached * 1000:.1f} ms"
        )

        box = await provider.start(image, SPEC)
        assert isinstance(box, RootfsBox)
        written = box.bytes_written()
        floor = []
        for _ in range(50):
            began = time.perf_counter()
            subprocess.run(
                [
                    "bwrap",
                    "--bind",
                    str(box.root),
                    "/",
                    "--proc",
                    "/proc",
                    "--dev",
                    "/dev",
                    "--unshare-all",
                    "--",
                    "true",
                ],
                check=True,
            )
            floor.append(time.perf_counter() - began)
        await box.close()
        lines.append(f"floor (bwrap true over a mounted box): {percentiles(floor)}")
        lines.append(f"written by a start: {written} bytes (the image's files: none copied)")

        for width in (1, concurrency):
            starts, runs, closes = [], [], []
            began = time.perf_counter()
            for _ in range(episodes // width):
                done = await asyncio.gather(*(episode(provider, image) for _ in range(width)))
                for start, run, close in done:
                    starts.append(start)
                    runs.append(run)
                    closes.append(close)
            total = time.perf_counter() - began
            lines.append(
                f"episodes x{width}: {len(starts) / total:.1f} per s; start {percentiles(starts)}"
                f"; launch+exit {percentiles(runs)}; close {percentiles(closes)}"
            )
        mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
        left = [point for point in mounts if point.startswith(str(runtime))]
        lines.append(f"leftovers: {len(left)} mounts, {len(list(runtime.iterdir()))} entries")
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(runtime, ignore_errors=True)
        shutil.rmtree(context, ignore_errors=True)
    return lines


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", type=Path, required=True, help="a Debian base root fs tar")
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--write", action="store_true", help="append to results/machines.md")
    options = parser.parse_args()
    found = asyncio.run(main(options.base, options.episodes, options.concurrency))
    header = (
        f"## rootfs provider, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
        f"{platform.node()}, {len(__import__('os').sched_getaffinity(0))} cores"
    )
    print(header, *found, sep="\n")
    if options.write:
        with open(Path(__file__).with_name("results") / "machines_rootfs.md", "a") as out:
            print(header, "", *(f"- {line}" for line in found), "", sep="\n", file=out)
