"""Leftovers of the docker provider after many episodes with faults injected (issue 26).

Episodes cycle through: a clean one (start, write a file, close); the command killed at its
time limit (``sleep`` in the background and the foreground); the box's container killed from
outside mid-command (``docker kill``), then closed; a build step that fails; the episode
cancelled mid-command (``asyncio`` cancellation, as on Ctrl-C); a start cancelled before the
box exists. Every ``--kill-every`` episodes a separate collector process starts two boxes
with commands running and is killed with SIGKILL; a new provider (the next run) reaps them.
At the end the run's provider reaps once more, as its next start would: a start cancelled
while ``docker run`` was in flight may have its container made after it gave up.

At the end it counts what is left: containers labelled ``palaestra.box`` whose lease names
this process or one of its collectors, and host processes running the marked ``sleep``.
Every count must be 0.

Run from the repository root (needs the daemon and the base: scripts/install_machines.sh):
``.venv/bin/python benchmarks/machines_docker_faults.py [--episodes 2000] [--write]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from machines import RESULTS, replace_section

from palaestra.errors import SandboxFailure
from palaestra.sandbox.limits import Limits
from palaestra.sandbox.machines import images
from palaestra.sandbox.machines.docker import BOX_LABEL, LEASE_LABEL, DockerBox, DockerProvider
from palaestra.sandbox.machines.provider import BoxSpec, Image
from palaestra.sandbox.process import supervise

MARK = "4747"
SPEC = BoxSpec(memory_mb=256, processes=64)
KINDS = (
    "clean",
    "command killed",
    "container killed",
    "build failed",
    "cancelled",
    "start cancelled",
)
COLLECTOR = """
import asyncio, subprocess, sys
from palaestra.sandbox.machines.docker import DockerProvider
from palaestra.sandbox.machines.provider import BoxSpec, Image

async def main():
    provider = DockerProvider()
    for _ in range(2):
        box = await provider.start(Image("docker", sys.argv[1], ""), BoxSpec(memory_mb=256))
        await box.launch(["sh", "-c", "sleep %s & sleep %s"], stdin=subprocess.DEVNULL)
    print("up", flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
""".replace("%s", MARK)


async def command(box: DockerBox, script: str, wall_time: float) -> None:
    process = await box.launch(["sh", "-c", script], stdin=subprocess.DEVNULL)
    try:
        await supervise(process, Limits(wall_time=wall_time))
    finally:
        process.close()


async def episode(provider: DockerProvider, image: Image, kind: str, failing: Path) -> None:
    if kind == "build failed":
        (failing / "Dockerfile").write_text(
            f"FROM {images.TAGS[0]}\nRUN echo {secrets.token_hex(6)} && exit 7\n"
        )
        with contextlib.suppress(SandboxFailure):
            await provider.build(failing)
            raise SystemExit("a failing build did not fail")
        return
    if kind == "start cancelled":
        task = asyncio.create_task(provider.start(image, SPEC))
        await asyncio.sleep(0.05)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return
    box = await provider.start(image, SPEC)
    try:
        if kind == "clean":
            await command(box, "echo x > /f", 30)
        elif kind == "command killed":
            await command(box, f"sleep {MARK} & sleep {MARK}", 0.5)
        elif kind == "container killed":
            running = asyncio.create_task(command(box, f"sleep {MARK}", 30))
            await asyncio.sleep(0.3)
            subprocess.run(["docker", "kill", box.container], capture_output=True)
            await running
        elif kind == "cancelled":
            running = asyncio.create_task(command(box, f"sleep {MARK} & sleep {MARK}", 30))
            await asyncio.sleep(0.3)
            running.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await running
    finally:
        await box.close()


def kill_a_collector(image: Image) -> int:
    collector = subprocess.Popen(
        [sys.executable, "-c", COLLECTOR, image.ref],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert collector.stdout is not None
    if collector.stdout.readline().strip() != b"up":
        raise SystemExit("the collector did not start its boxes")
    collector.send_signal(signal.SIGKILL)
    collector.wait()
    collector.stdout.close()
    return collector.pid


def leftovers(owners: set[int]) -> tuple[int, int]:
    """Containers leased to ``owners``, and host processes of the marked sleeps."""
    listing = subprocess.run(
        ["docker", "ps", "--all", "--filter", f"label={BOX_LABEL}=1",
         "--format", f'{{{{.Label "{LEASE_LABEL}"}}}}'],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    containers = sum(
        1 for lease in listing.stdout.split() if lease.split(":")[0] in map(str, owners)
    )
    processes = 0
    for entry in os.listdir("/proc"):
        with contextlib.suppress(OSError):
            if entry.isdigit() and Path(f"/proc/{entry}/cmdline").read_bytes() == (
                f"sleep\0{MARK}\0".encode()
            ):
                processes += 1
    return containers, processes


async def run(total: int, kill_every: int) -> tuple[Counter[str], int, float, tuple[int, int]]:
    images.docker_base()
    image = Image("docker", images.TAGS[0], "")
    owners = {os.getpid()}
    counts: Counter[str] = Counter()
    killed = 0
    provider = DockerProvider()
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="palaestra-bench-faults-") as failing:
        for number in range(total):
            if kill_every and number % kill_every == kill_every - 1:
                owners.add(await asyncio.to_thread(kill_a_collector, image))
                killed += 1
                await asyncio.to_thread(DockerProvider().reap)  # the next run, as it begins
            kind = KINDS[number % len(KINDS)]
            await episode(provider, image, kind, Path(failing))
            counts[kind] += 1
    await asyncio.sleep(5.0)  # late creations of cancelled starts land
    await asyncio.to_thread(provider.reap)  # what its next start would do: abandoned starts
    await asyncio.to_thread(DockerProvider().reap)  # the run after the last killed collector
    await asyncio.sleep(1.0)  # the daemon's last kills land
    return counts, killed, time.perf_counter() - began, leftovers(owners)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=2000)
    parser.add_argument("--kill-every", type=int, default=50)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    counts, killed, spent, (containers, processes) = asyncio.run(
        run(args.episodes, args.kill_every)
    )
    body = (
        f"{datetime.now(UTC):%Y-%m-%d}, {platform.machine()}, {os.cpu_count()} cores, "
        f"load average {load:.1f} -> {os.getloadavg()[0]:.1f} (the cores are shared). "
        f"`.venv/bin/python benchmarks/machines_docker_faults.py --episodes {args.episodes} "
        f"--write`\n\n"
        f"- episodes: {sum(counts.values())} in {spent:.0f} s ("
        + ", ".join(f"{kind} {count}" for kind, count in counts.items())
        + f"), and {killed} collectors killed with SIGKILL holding 2 boxes each\n"
        f"- leftovers: {containers} containers, {processes} processes"
    )
    print(body)
    if args.write:
        text = RESULTS.read_text() if RESULTS.exists() else "# Machine providers benchmark\n"
        RESULTS.write_text(replace_section(text, "faults: docker", body))
    if containers or processes:
        sys.exit(1)


if __name__ == "__main__":
    main()
