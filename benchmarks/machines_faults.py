"""Leftovers of the rootfs provider after many episodes with faults injected (issue 26).

Episodes cycle through: a clean one (start, write a file, close); the command killed
mid-run; every process of the box killed from outside; a build step that fails; the
episode cancelled mid-command (``asyncio`` cancellation, as on Ctrl-C). Every
``--kill-every`` episodes a separate collector process starts two boxes with commands
running and is killed with SIGKILL; the next provider reaps what it left.

At the end it counts what is left: overlay mounts, box and build directories, leases,
half-built layers, cgroups made by this run or its collectors, and processes of the boxes
(the commands are ``sleep 3131``, found by that marker). Every count must be 0.

Run as root: ``.venv/bin/python benchmarks/machines_faults.py --base BASE.tar
[--episodes 2000] [--write]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import shutil
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
from palaestra.sandbox.machines import leases
from palaestra.sandbox.machines.provider import BoxSpec, Image
from palaestra.sandbox.machines.rootfs import RootfsBox, RootfsProvider
from palaestra.sandbox.process import supervise
from palaestra.sandbox.workdir import PREFIX

MARK = "3131"
SPEC = BoxSpec(memory_mb=256, processes=64)
COLLECTOR = """
import asyncio, json, subprocess, sys
from pathlib import Path
from palaestra.sandbox.machines.provider import BoxSpec, Image
from palaestra.sandbox.machines.rootfs import RootfsProvider

async def main():
    cache, runtime, tar, image = sys.argv[1:5]
    provider = RootfsProvider(cache=Path(cache), runtime=Path(runtime), base=lambda: Path(tar))
    image = Image(**json.loads(image))
    for _ in range(2):
        box = await provider.start(image, BoxSpec(memory_mb=256))
        await box.launch(["sh", "-c", "sleep %s & sleep %s"], stdin=subprocess.DEVNULL)
    print("up", flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
""".replace("%s", MARK)


async def episode(provider: RootfsProvider, image: Image, kind: int, failing: Path) -> str:
    if kind == 3:  # a build step that fails
        (failing / "Dockerfile").write_text(
            f"FROM debian:bookworm-slim\nRUN echo {time.monotonic_ns()} && exit 7\n"
        )
        with contextlib.suppress(SandboxFailure):
            await provider.build(failing)
            return "build failure did not fail"
        return "build failed"
    box = await provider.start(image, SPEC)
    assert isinstance(box, RootfsBox)
    try:
        if kind == 0:
            process = await box.launch(["sh", "-c", "echo x > /f"], stdin=subprocess.DEVNULL)
            await supervise(process, Limits(wall_time=30))
            process.close()
            return "clean"
        process = await box.launch(["sleep", MARK], stdin=subprocess.DEVNULL)
        try:
            await asyncio.sleep(0.02)
            if kind == 1:
                process.kill()
                await process.wait()
                return "command killed"
            if kind == 2:
                procs = Path(box.lease.cgroups[0], "cgroup.procs")
                for _ in range(200):  # until its launch chain has joined the box's cgroups
                    if procs.read_text().strip():
                        break
                    await asyncio.sleep(0.01)
                for path in box.lease.cgroups:
                    leases.kill_cgroup(Path(path))
                await asyncio.wait_for(process.wait(), 10)
                return "box killed from outside"
            task = asyncio.ensure_future(supervise(process, Limits(wall_time=60)))
            await asyncio.sleep(0.02)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            return "cancelled"
        finally:
            if process.returncode is None:
                process.kill_now()
            process.close()
    finally:
        await box.close()


def kill_a_collector(provider: RootfsProvider, image: Image, base: Path) -> int:
    record = json.dumps(
        {
            "provider": image.provider,
            "ref": image.ref,
            "digest": image.digest,
            "workdir": image.workdir,
            "env": dict(image.env),
            "user": image.user,
        }
    )
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            COLLECTOR,
            str(provider.store.root),
            str(provider.runtime),
            str(base),
            record,
        ],
        stdout=subprocess.PIPE,
    )
    assert child.stdout is not None
    child.stdout.readline()
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    return child.pid


def leftovers(provider: RootfsProvider, owners: set[int]) -> dict[str, int]:
    mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    roots = (str(provider.runtime), str(provider.build_dir))
    cgroups = 0
    if provider._cgroups is not None:
        bases = [provider._cgroups.memory.base] if provider._cgroups.memory else []
        bases += [found[0] for found in (provider._cgroups.pids, provider._cgroups.cpu) if found]
        for base in bases:
            for entry in base.glob(f"{PREFIX}*"):
                pid = entry.name[len(PREFIX) :].split("-")[0]
                if pid.isdigit() and int(pid) in owners:
                    cgroups += 1
    processes = 0
    for entry in os.listdir("/proc"):
        with contextlib.suppress(OSError):
            if (
                entry.isdigit()
                and f"sleep\0{MARK}".encode() in Path(f"/proc/{entry}/cmdline").read_bytes()
            ):
                processes += 1
    return {
        "mounts": sum(point.startswith(roots) for point in mounts),
        "directories": len(list(provider.runtime.iterdir()))
        + len(list(provider.build_dir.iterdir())),
        "leases": len(list(provider.runtime.glob("*.lease"))),
        "half-built layers": sum(p.name.startswith(".") for p in provider.store.layers.iterdir()),
        "cgroups": cgroups,
        "processes": processes,
    }


async def main(base: Path, episodes: int, kill_every: int) -> list[str]:
    cache = Path(tempfile.mkdtemp(prefix="palaestra-faults-rootfs-"))
    runtime = Path(tempfile.mkdtemp(prefix="palaestra-faults-boxes-"))
    runtime.chmod(0o711)
    context = Path(tempfile.mkdtemp(prefix="palaestra-faults-context-"))
    failing = Path(tempfile.mkdtemp(prefix="palaestra-faults-failing-"))
    (context / "Dockerfile").write_text("FROM debian:bookworm-slim\nRUN echo built > /built\n")
    outcomes: Counter[str] = Counter()
    owners = {os.getpid()}
    try:
        provider = RootfsProvider(cache=cache, runtime=runtime, base=lambda: base)
        image = await provider.build(context)
        began = time.perf_counter()
        for index in range(episodes):
            if kill_every and index % kill_every == kill_every - 1:
                owners.add(kill_a_collector(provider, image, base))
                provider = RootfsProvider(cache=cache, runtime=runtime, base=lambda: base)
                provider.prepare()
                outcomes["collectors killed"] += 1
                outcomes["their boxes reaped"] += provider.reaped
                continue
            outcomes[await episode(provider, image, index % 5, failing)] += 1
        took = time.perf_counter() - began
        await asyncio.sleep(1.0)
        left = leftovers(provider, owners)
    finally:
        for path in (cache, runtime, context, failing):
            shutil.rmtree(path, ignore_errors=True)
    return [
        f"{episodes} episodes in {took:.0f} s: "
        + ", ".join(f"{count} {what}" for what, count in sorted(outcomes.items())),
        "left: " + ", ".join(f"{count} {what}" for what, count in left.items()),
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", type=Path, required=True, help="a Debian base root fs tar")
    parser.add_argument("--episodes", type=int, default=2000)
    parser.add_argument("--kill-every", type=int, default=50)
    parser.add_argument(
        "--write",
        action="store_true",
        help="its section in results/machines.md",
    )
    options = parser.parse_args()
    found = asyncio.run(main(options.base, options.episodes, options.kill_every))
    header = (
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.node()}, "
        f"{len(os.sched_getaffinity(0))} cores, load average (1/5/15 min) "
        + "/".join(f"{value:.1f}" for value in os.getloadavg())
        + f" at the end. `.venv/bin/python benchmarks/machines_faults.py --episodes "
        f"{options.episodes} --write`"
    )
    body = "\n".join([header, "", *(f"- {line}" for line in found)])
    print(body)
    if options.write:
        text = RESULTS.read_text() if RESULTS.exists() else "# Machine providers benchmark\n"
        RESULTS.write_text(replace_section(text, "faults: rootfs", body))
