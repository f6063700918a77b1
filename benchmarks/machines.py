"""Machine providers: build, start, close, episodes per second, bytes written (issue 26).

For one provider (``--provider rootfs|docker``) and one task, the empty task (a Dockerfile
that is only ``FROM`` the offline base) or a Harbor task folder (``--task DIR``):

1. ``build``: cold (every step run: a fresh layer cache for rootfs, a unique ``ENV`` line
   right after ``FROM`` for docker, so no step below it is cached) and cached (the same folder
   again: nothing run).
2. ``start`` / ``close``: one box at a time, p50/p99 of each.
3. ``episodes``: start a box, run ``true`` in it, close it, one at a time and
   ``--concurrency`` at once: episodes per second, p50/p99 of one episode.
4. with ``--task``: the oracle's episode as the Harbor runner plays it: start, copy
   ``solution/`` in and run ``solve.sh``, copy ``tests/`` in and run ``test.sh``, read the
   reward, then, before closing, what the episode wrote (rootfs: the box's upper directory;
   docker: the container's ``SizeRw``), beside the image's size: copy-on-write at work.
5. ``leftovers`` after the run: rootfs: mounts and entries under its runtime directory;
   docker: containers leased to this process.

Beside them, the bare floors one at a time: ``bwrap --bind / / true`` and
``docker run --rm --network none <base> true``. Each (provider, task) section of
``benchmarks/results/machines.md`` is replaced in place (``--write``).

Run from the repository root as root (needs the base: ``python -m
palaestra.sandbox.machines.images --print``; docker needs the daemon):
``.venv/bin/python benchmarks/machines.py --provider rootfs [--task DIR] [--write]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from palaestra.environment.kinds.harbor.boxes import read_in_box, run, stage
from palaestra.environment.kinds.harbor.rewards import read_reward
from palaestra.environment.kinds.harbor.tasks import box_spec, load_tasks
from palaestra.sandbox.limits import Limits
from palaestra.sandbox.machines import images
from palaestra.sandbox.machines.provider import Box, BoxSpec, Image, Provider
from palaestra.sandbox.machines.registry import make_provider
from palaestra.sandbox.process import supervise
from palaestra.wire.harbor import HarborTask

RESULTS = Path(__file__).with_name("results") / "machines.md"


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return f"p50 {statistics.median(ordered) * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms"


def human(size: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024  # type: ignore[assignment]
    raise AssertionError


@dataclass
class Bench:
    provider: Provider
    name: str
    scratch: Path
    rows: list[str] = field(default_factory=list)

    def row(self, measure: str, result: str) -> None:
        self.rows.append(f"| {measure} | {result} |")
        print(f"  {measure}: {result}", flush=True)


def cold_context(context: Path, into: Path, provider: str) -> Path:
    """A copy of ``context`` whose build shares no cached step with an earlier build."""
    copy = into / f"cold-{secrets.token_hex(4)}"
    shutil.copytree(context, copy)
    if provider == "docker":
        dockerfile = copy / "Dockerfile"
        lines = dockerfile.read_text().splitlines(keepends=True)
        at = next(i for i, line in enumerate(lines) if line.upper().startswith("FROM ")) + 1
        lines.insert(at, f"ENV PALAESTRA_BENCH_COLD={secrets.token_hex(8)}\n")
        dockerfile.write_text("".join(lines))
    return copy


async def builds(bench: Bench, context: Path, cold_provider: Provider) -> Image:
    copy = cold_context(context, bench.scratch, bench.name)
    began = time.perf_counter()
    cold = await cold_provider.build(copy)
    cold_s = time.perf_counter() - began
    began = time.perf_counter()
    await cold_provider.build(copy)
    cached_s = time.perf_counter() - began
    steps = getattr(cold_provider, "steps_run", None)
    bench.row(
        "build the image: cold / cached",
        f"{cold_s:.1f} s{f' ({steps} steps run)' if steps is not None else ''} / "
        f"{cached_s * 1000:.0f} ms",
    )
    if bench.name == "docker":
        subprocess.run(["docker", "image", "rm", "--force", cold.ref], capture_output=True)
    return await bench.provider.build(context)  # the image the rest measures


async def starts(bench: Bench, image: Image, spec: BoxSpec, runs: int) -> None:
    opened, closed = [], []
    for _ in range(runs):
        began = time.perf_counter()
        box = await bench.provider.start(image, spec)
        middle = time.perf_counter()
        await box.close()
        opened.append(middle - began)
        closed.append(time.perf_counter() - middle)
    bench.row("start a box", f"{percentiles(opened)} ({runs} runs)")
    bench.row("close a box", f"{percentiles(closed)} ({runs} runs)")


async def episodes(bench: Bench, image: Image, spec: BoxSpec, total: int, width: int) -> None:
    gate = asyncio.Semaphore(width)
    times: list[float] = []

    async def one() -> None:
        async with gate:
            began = time.perf_counter()
            async with await bench.provider.start(image, spec) as box:
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
    rate = total / (time.perf_counter() - began)
    bench.row(
        f"episode (start, `true`, close), {width} at once",
        f"{rate:.2f} episodes/s; one episode {percentiles(times)} ({total} episodes)",
    )


def user_of(user: str | int | None) -> str | None:
    return None if user is None else str(user)


def written(bench: Bench, box: Box) -> tuple[int, str]:
    """Bytes the box holds in its own copy-on-write layer, and how that was read."""
    if bench.name == "docker":
        size = subprocess.run(
            ["docker", "container", "inspect", "--size", "--format", "{{.SizeRw}}",
             box.container],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        return int(size), "the container's SizeRw"
    return box.bytes_written(), "the box's upper directory"


def image_size(bench: Bench, image: Image) -> int:
    if bench.name == "docker":
        size = subprocess.run(
            ["docker", "image", "inspect", "--format", "{{.Size}}", image.ref],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        return int(size)
    total = 0
    store = bench.provider.store
    record = json.loads((store.images / f"{image.ref}.json").read_text())
    for layer in record["chain"]:  # the image's layers, bottom (the base) to top
        for top, _, names in os.walk(store.path(layer)):
            for name in names:
                total += os.lstat(os.path.join(top, name)).st_size
    return total


async def oracle(bench: Bench, image: Image, task: HarborTask, runs: int) -> None:
    """The oracle's episode as the Harbor runner plays it, and what it wrote."""
    config = task.config
    spec = box_spec(task)
    env = dict(config.environment.env)
    times, sizes, rewards = [], [], []
    how = ""
    for _ in range(runs):
        began = time.perf_counter()
        async with await bench.provider.start(image, spec) as box:
            after_start, _ = written(bench, box)
            await stage(box, task.path / "solution", "/solution")
            solved = await run(
                box,
                "bash /solution/solve.sh",
                timeout=600,
                user=user_of(config.agent.user),
                cwd=config.environment.workdir,
                env={**env, **config.solution.env},
            )
            if solved.status != 0:
                raise SystemExit(f"solve.sh exited {solved.status}: {solved.output[-400:]!r}")
            await stage(box, task.path / "tests", "/tests", empty="/logs/verifier")
            await run(
                box,
                "bash /tests/test.sh > /logs/verifier/test-stdout.txt 2>&1",
                timeout=config.verifier.timeout_sec,
                user=user_of(config.verifier.user),
                cwd=config.environment.workdir,
                env={**env, **config.verifier.env},
            )
            reward = read_reward(lambda name: read_in_box(box.root, f"/logs/verifier/{name}"))
            size, how = written(bench, box)
            sizes.append(size)
            rewards.append(reward.reward)
        times.append(time.perf_counter() - began)
    bench.row(
        "oracle episode (start, solve.sh, test.sh, reward, close)",
        f"one episode {percentiles(times)}; rewards {sorted(set(rewards))} ({runs} episodes)",
    )
    bench.row(
        "bytes written by a start alone",
        f"{human(after_start)} ({how})",
    )
    bench.row(
        "bytes written by an oracle episode",
        f"median {human(int(statistics.median(sizes)))}, max {human(max(sizes))} ({how}), "
        f"the image: {human(image_size(bench, image))}",
    )


def leftovers(bench: Bench) -> str:
    if bench.name == "docker":
        listing = subprocess.run(
            ["docker", "ps", "--all", "--filter", "label=palaestra.box=1",
             "--format", '{{.Label "palaestra.lease"}}'],
            capture_output=True, text=True, check=True,
        ).stdout.split()  # fmt: skip
        mine = sum(1 for lease in listing if lease.split(":")[0] == str(os.getpid()))
        return f"{mine} containers leased to this run"
    runtime = str(bench.provider.runtime)
    mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    left = [point for point in mounts if point.startswith(runtime)]
    entries = list(Path(runtime).iterdir())
    return f"{len(left)} mounts, {len(entries)} entries in the runtime directory"


async def measure(args: argparse.Namespace) -> tuple[str, list[str]]:
    scratch = Path(tempfile.mkdtemp(prefix="palaestra-bench-machines-"))
    options: dict[str, object] = {}
    cold_options: dict[str, object] = {}
    if args.provider == "rootfs":
        images.base_tar()
        runtime = scratch / "boxes"
        runtime.mkdir(mode=0o711)
        scratch.chmod(0o711)
        options = {"runtime": runtime}
        cold_options = {"runtime": runtime, "cache": scratch / "cold-cache"}
    else:
        images.docker_base()
    provider = make_provider(args.provider, **options)
    problem = provider.problem()
    if problem is not None:
        raise SystemExit(f"{args.provider}: {problem}")
    bench = Bench(provider, args.provider, scratch)
    try:
        task: HarborTask | None = None
        if args.task is None:
            title = "empty task"
            context = scratch / "empty"
            context.mkdir()
            (context / "Dockerfile").write_text(f"FROM {images.TAGS[0]}\n")
            spec = BoxSpec()
        else:
            (task,) = load_tasks(args.task).values()
            title = f"task {task.path.name}"
            context = task.path / "environment"
            spec = box_spec(task)
        print(f"{args.provider}, {title}", flush=True)
        image = await builds(bench, context, make_provider(args.provider, **cold_options))
        await starts(bench, image, spec, args.runs)
        for width in sorted({1, args.concurrency}):
            await episodes(bench, image, spec, args.episodes, width)
        if task is not None:
            await oracle(bench, image, task, args.oracle)
        bench.row("leftovers after the run", leftovers(bench))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return title, bench.rows


def floor(argv: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - began)
    return times


def floors(runs: int) -> list[str]:
    rows = []
    if shutil.which("bwrap"):
        run = ["bwrap", "--bind", "/", "/", "true"]
        rows.append(f"| `{' '.join(run)}` | {percentiles(floor(run, runs))} ({runs} runs) |")
    if shutil.which("docker"):
        run = ["docker", "run", "--rm", "--network", "none", images.TAGS[0], "true"]
        rows.append(f"| `{' '.join(run)}` | {percentiles(floor(run, runs))} ({runs} runs) |")
    return rows


def replace_section(text: str, title: str, body: str) -> str:
    """``text`` with the ``## title`` section replaced by ``body`` (added if missing)."""
    section = f"## {title}\n\n{body}\n"
    pattern = re.compile(rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.DOTALL | re.MULTILINE)
    if pattern.search(text):
        return pattern.sub(lambda _: section + "\n", text).rstrip() + "\n"
    return text.rstrip() + "\n\n" + section


def load() -> str:
    return "/".join(f"{value:.1f}" for value in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--provider", default="rootfs", choices=["rootfs", "docker"])
    parser.add_argument("--task", type=Path, help="a Harbor task folder (default: empty task)")
    parser.add_argument("--runs", type=int, default=50, help="sequential starts, floor runs")
    parser.add_argument("--episodes", type=int, default=30)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--oracle", type=int, default=3, help="oracle episodes (with --task)")
    parser.add_argument("--no-floors", action="store_true")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    before = load()
    started = datetime.now(UTC)
    title, rows = asyncio.run(measure(args))
    floor_rows = [] if args.no_floors else floors(args.runs)
    command = " ".join(["benchmarks/machines.py", *sys.argv[1:]])
    stamp = (
        f"{started:%Y-%m-%d %H:%M} UTC, {platform.machine()}, {os.cpu_count()} cores, "
        f"load average (1/5/15 min) {before} at the start, {load()} at the end (the cores "
        f"are shared with other jobs). `.venv/bin/python {command}`"
    )
    table = "| measure | result |\n|---|---|\n"
    provider_body = f"{stamp}\n\n{table}" + "\n".join(rows)
    print(provider_body)
    text = RESULTS.read_text() if RESULTS.exists() else "# Machine providers benchmark\n"
    text = replace_section(text, f"{args.provider}: {title}", provider_body)
    if floor_rows:
        floor_body = f"{stamp}\n\n{table}" + "\n".join(floor_rows)
        print(floor_body)
        text = replace_section(text, "the bare floors", floor_body)
    if args.write:
        RESULTS.write_text(text)


if __name__ == "__main__":
    main()
