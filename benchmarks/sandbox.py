"""Sandbox and worker-pool benchmarks (issue 6).

1. ``sandbox``: start-to-exit wall time of ``print(1)`` in the sandbox (bubblewrap and the
   rlimits-only fallback), of ``/bin/true``, and the round trip of a cell in a warm session.
2. ``pool``: the round trip of a trivial task through the warm worker pool.
3. ``math``: math-verify throughput on the event loop vs in the pool (1 and 2 workers),
   while a trivial rollout (seed, model call, verify, close; in process) is started every
   10 ms; we report the p50/p99 latency of those rollouts from their scheduled start, i.e.
   how responsive the event loop stays while verification runs. For reference, the
   machine's own ceiling: two plain interpreters verifying half the pairs each, no pool.

Run from the repository root: ``.venv/bin/python benchmarks/sandbox.py [--write]``.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import os
import platform
import statistics
import sys
import time
import warnings
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from palaestra import Environment, LocalEnvironmentClient, Session
from palaestra.agents import SingleTurnAgent
from palaestra.sandbox import Sandbox, WorkerPool
from palaestra.types import JsonDict, assistant_message

ROLLOUT_EVERY = 0.010


def verify_pair(gold: str, answer: str) -> bool:
    """One math-verify check (runs in a pool worker's main thread: its signal timeouts work)."""
    from math_verify import parse, verify

    return bool(verify(parse(gold), parse(answer)))


def add(a: int, b: int) -> int:
    return a + b


def math_pairs(count: int, start: int = 1) -> list[tuple[str, str]]:
    """Distinct (gold, answer) pairs of equal cost whatever ``start`` is: ``k`` only names the
    variable (``x_{k}``) or shifts a set, so no cache helps and no range is heavier."""
    pairs = []
    for k in range(start, start + count):
        c, x = k % 7 + 2, f"x_{{{k}}}"
        kind = k % 5
        if kind == 0:
            pairs.append((f"$\\frac{{{x}^2-{c * c}}}{{{x}-{c}}}$", f"${x}+{c}$"))
        elif kind == 1:
            pairs.append((f"$({x}+{c})^2$", f"${x}^2+{2 * c}{x}+{c * c}$"))
        elif kind == 2:
            pairs.append((f"$\\frac{{{k}}}{{8}}$", f"{k / 8}"))
        elif kind == 3:
            pairs.append((f"$\\sqrt{{{8 * c * c}}} {x}$", f"${2 * c}\\sqrt{{2}} {x}$"))
        else:
            pairs.append((f"$\\{{{k},{k + 1},{k + 2}\\}}$", f"$\\{{{k + 2},{k},{k + 1}\\}}$"))
    return pairs


class Trivial(Environment):
    """A rollout that costs nothing: the probe of event-loop responsiveness."""

    def verify(self, session: Session, response: JsonDict) -> float:
        return 1.0


class InstantModel:
    name = "instant"

    async def respond(self, params: JsonDict) -> JsonDict:
        await asyncio.sleep(0)  # a real model call always yields to the loop
        return {"id": "r", "status": "completed", "output": [assistant_message("4")]}


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def rollouts_while(work: Awaitable[Any]) -> tuple[float, list[float]]:
    """Run ``work`` while starting a trivial rollout every 10 ms; (seconds, latencies)."""
    client = LocalEnvironmentClient(Trivial())
    agent, model = SingleTurnAgent(), InstantModel()
    task: JsonDict = {"responses_create_params": {"input": "2+2?"}}
    latencies: list[float] = []
    done = asyncio.Event()

    async def probe() -> None:
        scheduled = time.perf_counter()
        while not done.is_set():
            result = await agent.run(task, client, model)
            assert result.failure is None
            latencies.append(time.perf_counter() - scheduled)
            scheduled += ROLLOUT_EVERY
            await asyncio.sleep(max(0.0, scheduled - time.perf_counter()))
            scheduled = max(scheduled, time.perf_counter() - ROLLOUT_EVERY)

    prober = asyncio.create_task(probe())
    started = time.perf_counter()
    await work
    elapsed = time.perf_counter() - started
    done.set()
    await prober
    await client.aclose()
    return elapsed, latencies


async def verify_all(
    pairs: list[tuple[str, str]], check: Callable[[str, str], Awaitable[bool]]
) -> None:
    gate = asyncio.Semaphore(8)

    async def one(gold: str, answer: str) -> None:
        async with gate:
            assert await check(gold, answer), (gold, answer)

    await asyncio.gather(*(one(gold, answer) for gold, answer in pairs))


async def bench_math(count: int, rounds: int) -> list[tuple[str, str, str]]:
    """Best-of-``rounds`` throughput per mode, modes interleaved (the cores are shared with
    other work, so single runs are noisy); latencies are pooled over all rounds."""
    check = importlib.import_module("benchmarks.sandbox").verify_pair  # picklable by name
    warm = math_pairs(1, start=10**6)[0]
    _, idle = await rollouts_while(asyncio.sleep(2.0))
    check(*warm)  # warm: imports and parser set-up happen once, outside the timing

    async def inline(gold: str, answer: str) -> bool:
        await asyncio.sleep(0)
        return bool(check(gold, answer))  # blocks the event loop while it runs

    rates: dict[str, float] = {}
    latencies: dict[str, list[float]] = {}
    pools = {n: WorkerPool(n, preload=("math_verify",)) for n in (1, 2)}
    try:
        for workers, pool in pools.items():
            await asyncio.gather(*(pool.run(check, *warm) for _ in range(workers)))
        fresh = iter(range(1, 10**6, count))  # new pairs for every measurement: no warm caches
        for _ in range(rounds):
            modes: dict[str, Callable[[str, str], Awaitable[bool]]] = {
                "on the event loop": inline,
                "pool, 1 worker": lambda g, a: pools[1].run(check, g, a),
                "pool, 2 workers": lambda g, a: pools[2].run(check, g, a),
            }
            for name, verifier in modes.items():
                pairs = math_pairs(count, start=next(fresh))
                seconds, seen = await rollouts_while(verify_all(pairs, verifier))
                rates[name] = max(rates.get(name, 0.0), count / seconds)
                latencies.setdefault(name, []).extend(seen)
            ceiling = count / await two_processes(count, next(fresh))
            rates["ceiling"] = max(rates.get("ceiling", 0.0), ceiling)
    finally:
        for pool in pools.values():
            await pool.aclose()
    base = rates["on the event loop"]
    rows = [("no verification", "-", _latency(idle))]
    rows += [
        (name, f"{rates[name]:.0f}/s ({rates[name] / base:.2f}x)", _latency(latencies[name]))
        for name in latencies
    ]
    rows.append(
        ("two plain processes, half each (the machine's ceiling, no pool)",
         f"{rates['ceiling']:.0f}/s ({rates['ceiling'] / base:.2f}x)", "-")
    )  # fmt: skip
    return rows


async def two_processes(count: int, first: int) -> float:
    """Seconds two independent interpreters take to verify half the pairs each."""
    code = (
        "import sys, time; from benchmarks.sandbox import math_pairs, verify_pair; "
        "verify_pair(*math_pairs(1, start=10**6)[0]); "
        f"pairs = math_pairs({count}, start={first}); start = time.perf_counter(); "
        "[verify_pair(*p) for p in pairs[int(sys.argv[1])::2]]; "
        "print(time.perf_counter() - start)"
    )
    root = str(Path(__file__).resolve().parents[1])
    processes = [
        await asyncio.create_subprocess_exec(
            sys.executable, "-c", code, str(half), cwd=root, stdout=asyncio.subprocess.PIPE
        )
        for half in (0, 1)
    ]
    outputs = await asyncio.gather(*(process.communicate() for process in processes))
    return max(float(out.decode()) for out, _ in outputs)


def _latency(latencies: list[float]) -> str:
    p50, p99 = percentile(latencies, 0.5), percentile(latencies, 0.99)
    return f"p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms ({len(latencies)} rollouts)"


async def bench_sandbox(runs: int) -> list[tuple[str, str]]:
    rows = []
    logging.getLogger("palaestra.sandbox").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fallback's warning: we know
        for isolation in ("bubblewrap", "rlimits"):
            sandbox = Sandbox(isolation=isolation)
            await sandbox.run_python("print(1)")
            times = []
            for _ in range(runs):
                result = await sandbox.run_python("print(1)")
                assert result.ok and result.stdout == "1\n"
                times.append(result.duration)
            rows.append((f"`print(1)`, {isolation}", _times(times)))
    sandbox = Sandbox(isolation="bubblewrap")
    times = [(await sandbox.run(["/bin/true"])).duration for _ in range(runs)]
    rows.append(("`/bin/true`, bubblewrap", _times(times)))
    started = time.perf_counter()
    async with await sandbox.session() as python:
        session_start = time.perf_counter() - started
        await python.run("x = 0")
        times = []
        for _ in range(runs):
            began = time.perf_counter()
            await python.run("x += 1\nx")
            times.append(time.perf_counter() - began)
    rows.append(("session start", f"{session_start * 1000:.1f} ms"))
    rows.append(("session cell `x += 1; x`", _times(times)))
    return rows


async def bench_pool(calls: int) -> tuple[str, str]:
    adder = importlib.import_module("benchmarks.sandbox").add
    async with WorkerPool(1) as pool:
        await pool.run(adder, 1, 2)
        times = []
        for _ in range(calls):
            began = time.perf_counter()
            await pool.run(adder, 1, 2)
            times.append(time.perf_counter() - began)
    return ("pool round trip, trivial task", _times(times))


def _times(times: list[float]) -> str:
    return (
        f"median {statistics.median(times) * 1000:.1f} ms, "
        f"p90 {percentile(times, 0.9) * 1000:.1f} ms ({len(times)} runs)"
    )


async def run(args: argparse.Namespace) -> str:
    sandbox_rows = await bench_sandbox(args.runs)
    sandbox_rows.append(await bench_pool(args.runs * 10))
    math_rows = await bench_math(args.pairs, args.rounds)
    lines = ["| measure | result |", "|---|---|"]
    lines += [f"| {name} | {value} |" for name, value in sandbox_rows]
    lines += [
        "",
        f"math-verify, {args.pairs} distinct pairs at concurrency 8, best of {args.rounds} "
        f"interleaved rounds, while a trivial rollout starts every "
        f"{ROLLOUT_EVERY * 1000:.0f} ms (latency from its scheduled start, all rounds):",
        "",
        "| verification | throughput | trivial rollout latency |",
        "|---|---|---|",
    ]
    lines += [f"| {name} | {rate} | {latency} |" for name, rate, latency in math_rows]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--pairs", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    table = asyncio.run(run(args))
    report = (
        f"# Sandbox and worker-pool benchmark\n\n{datetime.now(UTC):%Y-%m-%d}, "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load average {load:.1f} -> {os.getloadavg()[0]:.1f} (the cores are shared). "
        f"`.venv/bin/python benchmarks/sandbox.py --write`\n\n{table}"
    )
    print(report)
    if args.write:
        Path(__file__).with_name("results").mkdir(exist_ok=True)
        Path(__file__).with_name("results").joinpath("sandbox.md").write_text(report)


if __name__ == "__main__":
    main()
