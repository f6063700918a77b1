"""What ``--metrics-port`` costs a run: CPU per rollout with metrics on and off, side by side.

The same ``palaestra collect --env weather`` against the same instant mock model
(``mock_model.py``), alternating off / on, each try a fresh process; "on" adds
``--metrics-port`` and a scraper that GETs ``/metrics`` every ``--scrape-every`` seconds (1 s:
fifteen times Prometheus' default rate, so the scrapes' own cost shows). Reports each try, the
medians and their ratio (target: within 5%), then the per-rollout cost of the observer itself
against ``prometheus_client``'s own Counter and Histogram doing the same counting::

    .venv/bin/python benchmarks/metrics.py --n 3000 --tries 3

On a shared 2-core machine timed tries move by ±10%, more than the difference sought;
``--instructions`` counts CPU instructions per rollout with valgrind's callgrind instead (as
``compare.py --instructions``: the count at two sizes differenced, start-up out), which repeat
runs reproduce within 1%::

    .venv/bin/python benchmarks/metrics.py --instructions

Results: benchmarks/results/metrics.md.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import timeit
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from run import (  # noqa: E402  (the suite's helpers, beside this file)
    CONCURRENCY,
    Json,
    measured_run,
    mock_model,
    palaestra_collect,
    write_tasks,
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


class Scraper:
    """GETs ``url`` every ``every`` seconds until stopped; counts the scrapes answered."""

    def __init__(self, url: str, every: float) -> None:
        self.url, self.every = url, every
        self.answered = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Scraper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            try:
                with urllib.request.urlopen(self.url, timeout=5) as answer:
                    answer.read()
                self.answered += 1
            except OSError:
                pass  # not listening yet, or already stopped


def end_to_end(n: int, tries: int, every: float) -> dict[str, Json]:
    cpu: dict[str, list[float]] = {"off": [], "on": []}
    steady: dict[str, list[float]] = {"off": [], "on": []}
    scrapes: list[int] = []
    with tempfile.TemporaryDirectory() as scratch, mock_model() as mock:
        root = Path(scratch)
        tasks = write_tasks(root / "tasks.jsonl", n)
        for attempt in range(tries):
            for side in ("off", "on"):
                out = root / f"{side}-{attempt}.jsonl"
                command = palaestra_collect(tasks, out, mock.url, CONCURRENCY)
                port = free_port()
                if side == "on":
                    command += ["--metrics-port", str(port)]
                scraper = Scraper(f"http://127.0.0.1:{port}/metrics", every)
                with scraper if side == "on" else _nothing():
                    row: Json = measured_run(
                        f"metrics {side}", command, n, mock, output=out, timeout=max(120, n / 50)
                    )
                if "error" in row:
                    raise SystemExit(f"{side}: {row['error']}")
                if side == "on":
                    scrapes.append(scraper.answered)
                cpu[side].append(row["whole_cpu_ms_per_rollout"])
                if row["steady"]:
                    steady[side].append(row["steady"]["cpu_ms_per_rollout"])
    return {"whole command": cpu, "steady": steady, "scrapes": {"on": scrapes}}


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def observer_cost(rounds: int = 200_000) -> dict[str, float]:
    """µs per rollout: what the collector's observer does for one scored rollout (start,
    finish, five phases), in plain Python and with prometheus_client's metric objects."""
    from prometheus_client import CollectorRegistry, Counter, Histogram

    from palaestra.observe.metrics_counts import BUCKETS, RolloutCounts
    from palaestra.types import AgentResult

    timings = {"seed": 0.0002, "model": 0.004, "tools": 0.0003, "verify": 0.0001, "total": 0.005}
    result = AgentResult(timings=timings)
    counts = RolloutCounts()

    def plain() -> None:
        counts.rollout_started()
        counts.rollout_finished(result, 1.0)

    registry = CollectorRegistry()
    started = Counter("started", "s", registry=registry)
    finished = Counter("finished", "f", registry=registry)
    phases = Histogram("phase_seconds", "p", ["phase"], buckets=BUCKETS, registry=registry)
    children = {phase: phases.labels(phase) for phase in timings}

    def client() -> None:
        started.inc()
        finished.inc()
        for phase, seconds in result.timings.items():
            children[phase].observe(seconds)

    sides = (("plain Python (RolloutCounts)", plain), ("prometheus_client", client))
    return {
        name: min(timeit.repeat(function, number=rounds, repeat=5)) / rounds * 1e6
        for name, function in sides
    }


def instructions(small: int = 300, large: int = 1500) -> dict[str, float]:
    """Instructions per rollout with metrics off and on (no scrapes), start-up differenced."""
    per_rollout: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as scratch, mock_model() as mock:
        root = Path(scratch)
        tasks = {n: write_tasks(root / f"tasks-{n}.jsonl", n) for n in (small, large)}
        for side in ("off", "on"):
            counts = {}
            for n in (small, large):
                command = [
                    *("valgrind", "--tool=callgrind", f"--callgrind-out-file={root}/cg.out"),
                    *palaestra_collect(tasks[n], root / "out.jsonl", mock.url, CONCURRENCY),
                ]
                if side == "on":
                    command += ["--metrics-port", str(free_port())]
                done = subprocess.run(
                    command, capture_output=True, text=True, env=dict(os.environ), check=False
                )
                found = re.search(r"Collected : (\d+)", done.stderr)
                if found is None:
                    raise SystemExit(f"{side}: callgrind printed no count:\n{done.stderr[-1500:]}")
                counts[n] = int(found.group(1))
            per_rollout[side] = (counts[large] - counts[small]) / (large - small)
            print(f"  metrics {side}: {per_rollout[side]:,.0f} instructions per rollout")
    print(f"  on / off: {per_rollout['on'] / per_rollout['off']:.4f}x")
    return per_rollout


def scrape_cost(rounds: int = 200) -> float:
    """Milliseconds of CPU for one scrape of a collector's families (one in-process run's)."""
    from prometheus_client import generate_latest

    from palaestra import LocalEnvironmentClient
    from palaestra.envs.weather.environment import Weather
    from palaestra.models.openai.responses import OpenAIResponsesModel
    from palaestra.observe.metrics import registry_of
    from palaestra.observe.metrics_counts import RolloutCounts
    from palaestra.observe.sources import runner_sources
    from palaestra.types import AgentResult

    class Runner:
        env = LocalEnvironmentClient(Weather())
        model = OpenAIResponsesModel("http://127.0.0.1:9/v1")

    counts = RolloutCounts()
    for _ in range(100):
        counts.rollout_started()
        counts.rollout_finished(AgentResult(timings={"total": 0.01, "model": 0.005}), 1.0)
    registry = registry_of(runner_sources(Runner(), counts))  # type: ignore[arg-type]
    started = time.process_time()
    for _ in range(rounds):
        generate_latest(registry)
    return (time.process_time() - started) / rounds * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--n", type=int, default=3000, help="rollouts per try")
    parser.add_argument("--tries", type=int, default=3, help="interleaved tries per side")
    parser.add_argument("--scrape-every", type=float, default=1.0, help="seconds between scrapes")
    parser.add_argument(
        "--instructions", action="store_true", help="count instructions (callgrind) instead"
    )
    args = parser.parse_args()
    if args.instructions:
        instructions()
        return
    micro = observer_cost()
    figures = end_to_end(args.n, args.tries, args.scrape_every)
    print(f"\nweather, in process, N={args.n}, concurrency {CONCURRENCY}, {args.tries} tries")
    for label in ("whole command", "steady"):
        values = figures[label]
        for side in ("off", "on"):
            tries = ", ".join(f"{v:.3f}" for v in values[side])
            median = statistics.median(values[side]) if values[side] else float("nan")
            print(f"  {label:13} metrics {side:3}: median {median:.3f} ms ({tries})")
        if values["off"] and values["on"]:
            ratio = statistics.median(values["on"]) / statistics.median(values["off"])
            print(f"  {label:13} on / off: {ratio:.3f}x")
    print(f"  scrapes answered per 'on' try: {figures['scrapes']['on']}")
    print("\nthe observer per scored rollout (start + finish + 5 phases):")
    for name, micros in micro.items():
        print(f"  {name:30} {micros:.2f} µs")
    print(f"\none scrape of a collector's families: {scrape_cost():.2f} ms of CPU")


if __name__ == "__main__":
    main()
