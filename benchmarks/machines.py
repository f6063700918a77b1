"""Machine providers: box start latency and empty-task episodes per second (issue 26).

For one provider (``--provider docker``, or another of ``palaestra.sandbox.machines``):

1. ``start``: ``provider.start`` of the offline base (``debian:bookworm-slim``), one at a
   time: p50/p99 of the start, and of the ``close`` after it.
2. ``episodes``: an empty task's episode (start a box, run ``true`` in it, close it) at
   ``--concurrency`` episodes at once: episodes per second, and the p50/p99 of one episode.

Beside them, the bare floor: ``docker run --rm --network none <base> true`` and
``bwrap --bind / / true``, one at a time. Each provider's section of
``benchmarks/results/machines.md`` is replaced in place (``--write``), so providers can be
measured on different days without losing the others.

Run from the repository root (needs the daemon and the base: scripts/install_machines.sh):
``.venv/bin/python benchmarks/machines.py --provider docker [--write]``.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from palaestra.sandbox.limits import Limits
from palaestra.sandbox.machines import images
from palaestra.sandbox.machines.provider import BoxSpec, Image, Provider
from palaestra.sandbox.process import supervise

RESULTS = Path(__file__).with_name("results") / "machines.md"


def provider_class(name: str) -> type[Provider]:
    """The ``Provider`` subclass named ``name`` in ``palaestra.sandbox.machines.<name>``."""
    module = importlib.import_module(f"palaestra.sandbox.machines.{name}")
    for value in vars(module).values():
        if (
            isinstance(value, type)
            and issubclass(value, Provider)
            and getattr(value, "name", None) == name
        ):
            return value
    raise SystemExit(f"palaestra.sandbox.machines.{name} has no provider named {name!r}")


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return f"p50 {statistics.median(ordered) * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms"


def floor(argv: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - began)
    return times


async def base_image(provider: Provider, tmp: Path) -> Image:
    """The empty task: a Dockerfile that is only ``FROM`` the offline base."""
    (tmp / "Dockerfile").write_text(f"FROM {images.TAGS[0]}\n")
    return await provider.build(tmp)


async def starts(provider: Provider, image: Image, runs: int) -> tuple[list[float], list[float]]:
    opened, closed = [], []
    for _ in range(runs):
        began = time.perf_counter()
        box = await provider.start(image, BoxSpec())
        middle = time.perf_counter()
        await box.close()
        opened.append(middle - began)
        closed.append(time.perf_counter() - middle)
    return opened, closed


async def episodes(
    provider: Provider, image: Image, total: int, concurrency: int
) -> tuple[float, list[float]]:
    gate = asyncio.Semaphore(concurrency)
    times: list[float] = []

    async def one() -> None:
        async with gate:
            began = time.perf_counter()
            async with await provider.start(image, BoxSpec()) as box:
                process = await box.launch(["true"], stdin=subprocess.DEVNULL)
                try:
                    outcome = await supervise(process, Limits(wall_time=60))
                finally:
                    process.close()
                if outcome.status != 0:
                    raise SystemExit(f"`true` in a box exited {outcome.status}")
            times.append(time.perf_counter() - began)

    began = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(total)))
    return total / (time.perf_counter() - began), times


async def measure(name: str, runs: int, total: int, concurrency: int) -> list[str]:
    provider = provider_class(name)()
    problem = provider.problem()
    if problem is not None:
        raise SystemExit(f"{name}: {problem}")
    if name == "docker":
        images.docker_base()  # the base imported as debian:bookworm-slim
    else:
        images.base_tar()
    tmp = Path(f"/tmp/palaestra-bench-machines-{os.getpid()}")
    tmp.mkdir()
    try:
        image = await base_image(provider, tmp)
    finally:
        shutil.rmtree(tmp)
    opened, closed = await starts(provider, image, runs)
    rate, times = await episodes(provider, image, total, concurrency)
    written = await bytes_written(provider, image) if name == "docker" else None
    return [
        *(
            [f"| written to disk by a start (its overlay's upper layer) | {written} |"]
            if written
            else []
        ),
        f"| start a box | {percentiles(opened)} ({runs} runs) |",
        f"| close a box | {percentiles(closed)} ({runs} runs) |",
        f"| empty-task episode (start, `true`, close), {concurrency} at once "
        f"| {rate:.2f} episodes/s; one episode {percentiles(times)} ({total} episodes) |",
    ]


async def bytes_written(provider: Provider, image: Image) -> str:
    """What a started docker box holds in its own overlay layer (the image is not copied)."""
    async with await provider.start(image, BoxSpec()) as box:
        container = getattr(box, "container", "")
        upper = subprocess.run(
            ["docker", "inspect", "--format", "{{.GraphDriver.Data.UpperDir}}", container],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        files = [Path(top, name) for top, _, names in os.walk(upper) for name in names]
        size = sum(path.lstat().st_size for path in files)
        image_size = subprocess.run(
            ["docker", "image", "inspect", "--format", "{{.Size}}", image.ref],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
    return f"{size} bytes in {len(files)} file(s) (the image: {int(image_size) >> 20} MiB)"


def floors(runs: int) -> list[str]:
    rows = []
    if shutil.which("docker"):
        run = ["docker", "run", "--rm", "--network", "none", images.TAGS[0], "true"]
        rows.append(f"| `{' '.join(run)}` | {percentiles(floor(run, runs))} ({runs} runs) |")
    if shutil.which("bwrap"):
        run = ["bwrap", "--bind", "/", "/", "true"]
        rows.append(f"| `{' '.join(run)}` | {percentiles(floor(run, runs))} ({runs} runs) |")
    return rows


def replace_section(text: str, title: str, body: str) -> str:
    """``text`` with the ``## title`` section replaced by ``body`` (added if missing)."""
    section = f"## {title}\n\n{body}\n"
    pattern = re.compile(rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.DOTALL | re.MULTILINE)
    if pattern.search(text):
        return pattern.sub(lambda _: section + "\n", text).rstrip() + "\n"
    return text.rstrip() + "\n\n" + section


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--provider", default="docker")
    parser.add_argument("--runs", type=int, default=30, help="sequential starts and floor runs")
    parser.add_argument("--episodes", type=int, default=60)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    rows = asyncio.run(measure(args.provider, args.runs, args.episodes, args.concurrency))
    floor_rows = floors(args.runs)
    stamp = (
        f"{datetime.now(UTC):%Y-%m-%d}, {platform.machine()}, {os.cpu_count()} cores, "
        f"load average {load:.1f} -> {os.getloadavg()[0]:.1f} (the cores are shared). "
        f"`.venv/bin/python benchmarks/machines.py --provider {args.provider} --write`"
    )
    table = "| measure | result |\n|---|---|\n"
    provider_body = f"{stamp}\n\n{table}" + "\n".join(rows)
    floor_body = f"{stamp}\n\n{table}" + "\n".join(floor_rows)
    print(provider_body, floor_body, sep="\n\n")
    if args.write:
        text = RESULTS.read_text() if RESULTS.exists() else "# Machine providers benchmark\n"
        text = replace_section(text, f"provider: {args.provider}", provider_body)
        text = replace_section(text, "the bare floor", floor_body)
        RESULTS.write_text(text)


if __name__ == "__main__":
    main()
