"""The browser environment's costs: a Chromium's start and memory, a task page's load, one
step (an action and the observation after it), a warm lease from the pool.

1. ``start``: ``--browsers`` Chromiums started one at a time (keeper, process, DevTools
   websocket, page target): seconds each, p50/p99; then each one's resident memory (the sum
   of its process group's proportional set size, ``Pss``) with a MiniWoB++ page loaded.
2. ``load``: ``open_task`` (navigate to the page, seed it, start the episode, number the
   refs), ``--repeats`` times on the oracle pages in turn.
3. ``step``: on ``enter-text``, ``--repeats`` times each: a pixel click (``click_at``), the
   element list, the screenshot, and a whole step of the environment (``click_at`` tool with
   the ``both`` observation: action, element list and screenshot), through the in-process
   client as a collector runs it.
4. ``lease``: a warm lease and its return (the health check's round trip).
5. ``leftovers``: Chromium processes of this run alive after everything was closed.

Run from the repository root: ``.venv/bin/python benchmarks/browser.py [--write]``;
``--write`` replaces ``benchmarks/results/browser.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from palaestra import LocalEnvironmentClient
from palaestra.envs.browser import miniwob
from palaestra.envs.browser.chromium import Browser, chromium_path
from palaestra.envs.browser.environment import MiniWoBBrowser, task
from palaestra.envs.browser.oracles import SOLVERS
from palaestra.envs.browser.pool import BrowserPool

RESULTS = Path(__file__).resolve().parent / "results" / "browser.md"


def quantiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return statistics.median(ordered), p99


def group_pss_mb(pgid: int) -> float:
    """The process group's proportional set size: shared pages split among their users, so
    Chromium's processes (which share most of their pages) are not counted several times."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.getpgid(int(entry)) != pgid:
                continue
            with open(f"/proc/{entry}/smaps_rollup") as status:
                for line in status:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
        except (OSError, ProcessLookupError):
            continue
    return total / 1024


def timed(action: Callable[[], object], repeats: int) -> list[float]:
    samples = []
    for _ in range(repeats):
        began = time.perf_counter()
        action()
        samples.append(time.perf_counter() - began)
    return samples


def row(name: str, samples: list[float], unit: float = 1000.0, suffix: str = "ms") -> str:
    p50, p99 = quantiles(samples)
    return f"| {name} | {len(samples)} | {p50 * unit:.1f} {suffix} | {p99 * unit:.1f} {suffix} |"


def measure(browsers: int, repeats: int) -> list[str]:
    lines = ["| what | n | p50 | p99 |", "|---|---|---|---|"]
    started: list[Browser] = []
    starts = []
    for _ in range(browsers):
        began = time.perf_counter()
        started.append(Browser(miniwob.WIDTH, miniwob.HEIGHT))
        starts.append(time.perf_counter() - began)
    lines.append(row("start a browser", starts, 1.0, "s"))
    pages = sorted(SOLVERS)
    for index, browser in enumerate(started):
        miniwob.open_task(browser, pages[index % len(pages)], index, 600)
    memory = [group_pss_mb(browser.pid) for browser in started]
    lines.append(
        f"| memory of a browser with a page loaded | {len(memory)} | "
        f"{statistics.median(memory):.0f} MB | {max(memory):.0f} MB (max) |"
    )
    first = started[0]
    counter = iter(range(10**9))
    lines.append(
        row(
            "load a task page",
            timed(
                lambda: miniwob.open_task(first, pages[next(counter) % len(pages)], 7, 600),
                repeats,
            ),
        )
    )
    miniwob.open_task(first, "enter-text", 1, 600)
    lines.append(
        row(
            "pixel click (click_at, with its 50 ms settle)",
            timed(lambda: miniwob.click_at(first, 5, 5), repeats),
        )
    )
    lines.append(row("element list", timed(lambda: miniwob.elements(first), repeats)))
    shot = lambda: first.screenshot(miniwob.WIDTH, miniwob.HEIGHT)  # noqa: E731
    lines.append(row("screenshot (PNG, 160 x 210)", timed(shot, repeats)))
    for browser in started:
        browser.close()

    async def steps() -> tuple[list[float], list[float]]:
        environment = MiniWoBBrowser(browsers=1)
        client = LocalEnvironmentClient(environment)
        try:
            session = await client.seed(task("enter-text", 1, _utterance("enter-text", 1)))
            step_samples = []
            for _ in range(repeats):
                began = time.perf_counter()
                await client.call_tool(session, "click_at", {"x": 5, "y": 5})
                step_samples.append(time.perf_counter() - began)
            await client.close(session)
            pool = environment.pool
            lease_samples = []
            for _ in range(repeats):
                began = time.perf_counter()
                pool.give_back(pool.lease())
                lease_samples.append(time.perf_counter() - began)
            return step_samples, lease_samples
        finally:
            await client.aclose()

    step_samples, lease_samples = asyncio.run(steps())
    lines.append(
        row("one step: click_at tool, answered with elements and screenshot", step_samples)
    )
    lines.append(row("warm lease and return (health check)", lease_samples))
    scratch = tempfile.gettempdir()  # this run's own (main sets it): its browsers' profiles
    left = subprocess.run(
        ["pgrep", "-f", f"{scratch}/palaestra-browser-"], capture_output=True, text=True
    )
    own = [pid for pid in left.stdout.split() if int(pid) != os.getpid()]
    lines.append("")
    lines.append(f"Chromium processes of this run alive after closing: {len(own)}.")
    return lines


def _utterance(name: str, seed: int) -> str:
    pool = BrowserPool(1, miniwob.WIDTH, miniwob.HEIGHT)
    try:
        browser = pool.lease()
        utterance = miniwob.open_task(browser, name, seed, 600).utterance
        pool.give_back(browser)
        return utterance
    finally:
        pool.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--browsers", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    tempfile.tempdir = tempfile.mkdtemp(prefix="pbb-", dir="/tmp")
    version = subprocess.run([chromium_path(), "--version"], capture_output=True, text=True)
    header = [
        "# browser: start and step costs",
        "",
        f"Measured {datetime.now(UTC):%Y-%m-%d} with `benchmarks/browser.py --browsers "
        f"{args.browsers} --repeats {args.repeats}` on {platform.machine()}, "
        f"{os.cpu_count()} cores (shared with other work), {version.stdout.strip()}, "
        f"MiniWoB++ {miniwob.miniwob_version()}, headless, 160 x 210 viewport.",
        "",
    ]
    lines = header + measure(args.browsers, args.repeats)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.write:
        RESULTS.write_text(text)
    shutil.rmtree(tempfile.tempdir, ignore_errors=True)


if __name__ == "__main__":
    main()
