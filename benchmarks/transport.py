"""palaestra.transport side by side with the maintained async HTTP clients on PyPI.

The same work as the floor (``floor.py``): the two model calls of each weather rollout, made
by a bare client with no framework, against the instant mock model (``mock_model.py``, its own
process, never counted). Two measures per client, the two that decide whether palaestra keeps
its own client (issue 13, item 10):

1. **CPU per request at concurrency 64**: ``--n`` rollouts (two requests each) with 64 workers
   against the instant mock. CPU is the worker process's own (``time.process_time``: every
   thread, so clients running a Rust or C runtime in threads are charged for it), read around
   the requests only: interpreter start-up and imports are not counted.
2. **10,000 in flight**: 10,000 rollouts with 10,000 workers against the mock answering each
   call after 1 s; achieved / ideal as in ``run.py`` (ideal: the whole run in 2.0 s), and the
   CPU of that run.

Every client runs in its own process, in turn, ``--tries`` times with the order rotated each
try (the machine is shared: interleaving spreads its load over every client), and the table
gives the median and the range. The alternatives are not palaestra dependencies: install them
into a throwaway venv and pass its interpreter::

    python -m venv /tmp/tbench && /tmp/tbench/bin/pip install httptools orjson uvloop \\
        aiohttp httpx aiosonic niquests curl_cffi pyreqwest rnet
    .venv/bin/python benchmarks/transport.py --python /tmp/tbench/bin/python \\
        [--baseline DIR] [--clients palaestra,aiohttp,...] [--tries 5]

``--baseline DIR`` adds ``palaestra-before``: the transport package under ``DIR/palaestra``
(e.g. ``git archive <commit> palaestra/transport | tar -x -C DIR``), for a before/after pair.
The worker side (``--worker CLIENT``) is what each measured process runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import os
import statistics
import sys
import time
import types
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

Post = Callable[[str, bytes], Awaitable[bytes]]
JSON_HEADERS = {"Content-Type": "application/json"}
TIMEOUT = 600.0  # no client may give up on the 1 s mock at 10,000 in flight


# --- the clients (worker side) -----------------------------------------------------------------


@contextlib.asynccontextmanager
async def palaestra_client(concurrency: int) -> AsyncIterator[Post]:
    from palaestra.transport import HttpClient

    client = HttpClient()

    async def post(url: str, body: bytes) -> bytes:
        answer = await client.request(
            "POST", url, body=body, headers=JSON_HEADERS, read_timeout=TIMEOUT
        )
        return answer.body

    try:
        yield post
    finally:
        await client.aclose()


@contextlib.asynccontextmanager
async def aiohttp_client(concurrency: int) -> AsyncIterator[Post]:
    import aiohttp

    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=TIMEOUT)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

        async def post(url: str, body: bytes) -> bytes:
            async with session.post(url, data=body, headers=JSON_HEADERS) as answer:
                return await answer.read()

        yield post


@contextlib.asynccontextmanager
async def httpx_client(concurrency: int) -> AsyncIterator[Post]:
    import httpx

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=TIMEOUT, trust_env=False) as client:

        async def post(url: str, body: bytes) -> bytes:
            return (await client.post(url, content=body, headers=JSON_HEADERS)).content

        yield post


@contextlib.asynccontextmanager
async def aiosonic_client(concurrency: int) -> AsyncIterator[Post]:
    import aiosonic
    from aiosonic.pools import PoolConfig

    timeouts = aiosonic.Timeouts(request_timeout=TIMEOUT, sock_read=TIMEOUT, pool_acquire=TIMEOUT)
    pool = PoolConfig(size=max(concurrency, 1), max_conn_requests=None)
    connector = aiosonic.TCPConnector(pool_configs={":default": pool}, timeouts=timeouts)
    client = aiosonic.HTTPClient(connector=connector)

    async def post(url: str, body: bytes) -> bytes:
        answer = await client.post(url, data=body, headers=JSON_HEADERS, timeouts=timeouts)
        content: bytes = await answer.content()
        return content

    try:
        yield post
    finally:
        await client.connector.cleanup()


@contextlib.asynccontextmanager
async def niquests_client(concurrency: int) -> AsyncIterator[Post]:
    import niquests

    async with niquests.AsyncSession(pool_connections=1, pool_maxsize=concurrency) as session:
        session.trust_env = False

        async def post(url: str, body: bytes) -> bytes:
            answer = await session.post(url, data=body, headers=JSON_HEADERS, timeout=TIMEOUT)
            return answer.content or b""

        yield post


@contextlib.asynccontextmanager
async def curl_cffi_client(concurrency: int) -> AsyncIterator[Post]:
    from curl_cffi.requests import AsyncSession

    async with AsyncSession(max_clients=concurrency, timeout=TIMEOUT, trust_env=False) as session:

        async def post(url: str, body: bytes) -> bytes:
            answer = await session.post(url, data=body, headers=JSON_HEADERS)
            return answer.content

        yield post


@contextlib.asynccontextmanager
async def pyreqwest_client(concurrency: int) -> AsyncIterator[Post]:
    from datetime import timedelta

    from pyreqwest.client import ClientBuilder

    builder = ClientBuilder().timeout(timedelta(seconds=TIMEOUT)).no_proxy()
    async with builder.max_connections(None).build() as client:

        async def post(url: str, body: bytes) -> bytes:
            request = client.post(url).headers(JSON_HEADERS).body_bytes(body).build()
            answer = await request.send()
            return bytes(await answer.bytes())

        yield post


@contextlib.asynccontextmanager
async def rnet_client(concurrency: int) -> AsyncIterator[Post]:
    import rnet

    client = rnet.Client(timeout=int(TIMEOUT), no_proxy=True)

    async def post(url: str, body: bytes) -> bytes:
        answer = await client.post(url, body=body, headers=JSON_HEADERS)
        data: bytes = await answer.bytes()
        return data

    yield post


CLIENTS: dict[str, Callable[[int], contextlib.AbstractAsyncContextManager[Post]]] = {
    "palaestra": palaestra_client,
    "aiohttp": aiohttp_client,
    "httpx": httpx_client,
    "aiosonic": aiosonic_client,
    "niquests": niquests_client,
    "curl_cffi": curl_cffi_client,
    "pyreqwest": pyreqwest_client,
    "rnet": rnet_client,
}


def import_transport_from(root: Path) -> None:
    """``palaestra.transport`` from ``root/palaestra`` without running ``palaestra/__init__``
    (whose imports need the project's venv; the transport needs only httptools)."""
    package = types.ModuleType("palaestra")
    package.__path__ = [str(root / "palaestra")]
    sys.modules["palaestra"] = package


async def work(client: str, url: str, tasks: Path, concurrency: int) -> dict[str, Any]:
    sys.path.insert(0, str(HERE))
    from floor import rollout  # the floor's two calls per rollout, exactly

    lines = tasks.read_bytes().splitlines()
    todo = iter(lines)
    done = 0
    async with CLIENTS[client](concurrency) as post:
        cpu, started = time.process_time(), time.perf_counter()

        async def worker() -> None:
            nonlocal done
            for raw in todo:
                params = orjson.loads(raw)["responses_create_params"]
                params["model"] = "mock-weather"
                await rollout(post, url, params)
                done += 1

        await asyncio.gather(*(worker() for _ in range(concurrency)))
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    return {"rollouts": done, "requests": 2 * done, "seconds": seconds, "cpu_s": cpu}


def worker_main(options: argparse.Namespace) -> None:
    import_transport_from(Path(options.transport_root))
    gc.set_threshold(1_000_000, *gc.get_threshold()[1:])  # as palaestra collect and floor.py
    import uvloop

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        facts = runner.run(
            work(options.worker, options.url, Path(options.tasks), options.concurrency)
        )
    print("TRANSPORT " + orjson.dumps(facts).decode(), flush=True)


# --- the driver --------------------------------------------------------------------------------


def driver_main(options: argparse.Namespace) -> None:
    sys.path.insert(0, str(HERE))
    import tempfile

    from procs import run_measured
    from run import load, log, mock_model, write_tasks

    clients = [name for name in options.clients.split(",") if name]
    runs = [(name, REPO) for name in clients]
    if options.baseline:
        runs.insert(1, ("palaestra-before", Path(options.baseline)))
    root = Path(tempfile.mkdtemp(prefix="transport-bench-"))
    small = write_tasks(root / "tasks-small.jsonl", options.n)
    large = write_tasks(root / "tasks-large.jsonl", options.in_flight)
    ideal_seconds = 2.0  # two calls of 1 s each: every rollout in flight at once
    results: dict[str, dict[str, list[dict[str, Any]]]] = {
        name: {"c64": [], "flight": []} for name, _ in runs
    }
    env = {**os.environ, "PYTHONPATH": ""}
    given_up: set[tuple[str, str]] = set()  # a client that ran out of time once is not re-run
    with mock_model() as instant, mock_model(delay=1.0) as slow:
        for attempt in range(options.tries):
            shift = attempt % len(runs)
            for name, tree in runs[shift:] + runs[:shift]:
                client = "palaestra" if name == "palaestra-before" else name
                for phase, mock, tasks, concurrency in (
                    ("c64", instant, small, 64),
                    ("flight", slow, large, options.in_flight),
                ):
                    if (name, phase) in given_up:
                        continue
                    command = [
                        *(options.python, str(Path(__file__).resolve()), "--worker", client),
                        *("--transport-root", str(tree), "--url", mock.url + "/responses"),
                        *("--tasks", str(tasks), "--concurrency", str(concurrency)),
                    ]
                    before = load()
                    finished = run_measured(command, env=env, timeout=options.timeout)
                    line = next(
                        (x for x in finished.stdout.splitlines() if x.startswith("TRANSPORT ")),
                        None,
                    )
                    if finished.returncode != 0 or line is None:
                        error = finished.stderr[-600:]
                        if finished.wall >= options.timeout:
                            error = f"did not finish within {options.timeout:g} s"
                            given_up.add((name, phase))
                        log(f"{name} {phase}: FAILED {error}")
                        results[name][phase].append({"error": error})
                        continue
                    facts = orjson.loads(line.split(" ", 1)[1])
                    facts["load_before"] = before[0]
                    facts["us_per_request"] = facts["cpu_s"] / facts["requests"] * 1e6
                    facts["of_ideal"] = ideal_seconds / facts["seconds"]
                    results[name][phase].append(facts)
                    log(
                        f"{name} {phase}: {facts['us_per_request']:.0f} µs CPU/request, "
                        f"{facts['seconds']:.2f} s, {facts['of_ideal']:.0%} of ideal, "
                        f"load {before[0]:.1f}"
                    )
    out = Path(options.json)
    out.write_bytes(orjson.dumps(results, option=orjson.OPT_INDENT_2))
    print(table(results, options))


def _median_range(values: list[float], fmt: str) -> str:
    if not values:
        return "failed"
    low, high = fmt.format(min(values)), fmt.format(max(values))
    return f"{fmt.format(statistics.median(values))} ({low} to {high})"


def table(results: dict[str, dict[str, list[dict[str, Any]]]], options: argparse.Namespace) -> str:
    ours = [
        r["us_per_request"] for r in results.get("palaestra", {}).get("c64", []) if "error" not in r
    ]
    ours_median = statistics.median(ours) if ours else None
    rows = [
        "| client | CPU µs/request, c=64 | ratio to ours | CPU µs/request, 10,000 in flight "
        "| 10,000 in flight: achieved / ideal | failed tries |",
        "|---|---|---|---|---|---|",
    ]
    for name, phases in results.items():
        c64 = [r for r in phases["c64"] if "error" not in r]
        flight = [r for r in phases["flight"] if "error" not in r]
        failed = sum("error" in r for r in phases["c64"] + phases["flight"])
        per_request = [r["us_per_request"] for r in c64]
        ratio = (
            f"{statistics.median(per_request) / ours_median:.2f}"
            if ours_median and per_request
            else "-"
        )
        rows.append(
            f"| {name} | {_median_range(per_request, '{:.0f}')} | {ratio} "
            f"| {_median_range([r['us_per_request'] for r in flight], '{:.0f}')} "
            f"| {_median_range([100 * r['of_ideal'] for r in flight], '{:.0f}%')} | {failed} |"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--worker", choices=sorted(CLIENTS), help=argparse.SUPPRESS)
    parser.add_argument("--transport-root", default=str(REPO), help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--tasks", help=argparse.SUPPRESS)
    parser.add_argument("--concurrency", type=int, default=64, help=argparse.SUPPRESS)
    parser.add_argument("--python", default=sys.executable, help="the clients' interpreter")
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument("--baseline", help="a tree with palaestra/transport to compare with")
    parser.add_argument("--tries", type=int, default=5)
    parser.add_argument("--n", type=int, default=2500, help="rollouts at concurrency 64")
    parser.add_argument("--timeout", type=float, default=90, help="seconds a run may take")
    parser.add_argument("--in-flight", type=int, default=10_000)
    parser.add_argument("--json", default=str(HERE / "results" / "transport.json"))
    options = parser.parse_args()
    if options.worker:
        worker_main(options)
    else:
        driver_main(options)


if __name__ == "__main__":
    main()
