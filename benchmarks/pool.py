"""A pool of model endpoints: sticky least-loaded routing against round-robin and hashing.

Several mock endpoints (one process of its own, aiohttp) stand in for replicas of one model
that differ in speed and keep a prefix cache: a call is cheaper when the same rollout's previous
call went to the same endpoint (its history is cached there), and every call slows down when an
endpoint holds more calls than it has slots (a batch grows). One endpoint dies part-way through
each run: it stops listening and drops the calls it holds, as a killed server does.

The same tasks run three times through the real collector, the real tool-calling agent and the
weather environment in this process, over ``palaestra.models.pool.ModelPool`` with three
routings: ``sticky`` (palaestra's: a rollout stays on the endpoint its first call found
least-loaded), ``hash`` (NeMo Gym's: a session hashed to an endpoint, load ignored) and
``round_robin`` (each call to the next endpoint). All three take a dead endpoint out and retry
its calls elsewhere the same way, so only the choice of endpoint differs. A rollout is a seed,
four model calls (three tool calls, then an answer) and a verify.

Run alone: ``.venv/bin/python benchmarks/pool.py [--quick]`` (prints the table); ``run.py``'s
``pool`` phase runs it and puts the table in RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

Json = dict[str, Any]
HERE = Path(__file__).resolve().parent

SPEEDS = (1.0, 1.0, 1.6, 2.5)
"""Each endpoint's time per call relative to the fastest (a mix of GPU generations)."""
DYING = 1
"""The endpoint that dies (one of the fast ones)."""
DIES_AT = 0.35
"""It dies when the endpoints together have answered this share of the run's calls."""
SLOTS = 4
"""Calls an endpoint serves at full speed; beyond, each call slows in proportion (a batch)."""
DECODE_S = 0.030
"""Generating one answer."""
PREFILL_S = 0.030
"""Reading one turn of history that is not cached (a miss reads the whole history)."""
CACHED_S = 0.004
"""Reading the new turn when the rollout's earlier turns are cached here."""
TOOL_CALLS = 3
CONCURRENCY = 32
ROUTINGS = ("sticky", "hash", "round_robin")


# --- the mock endpoints (their own process) --------------------------------------------------


def _call(call_id: int, turn: int) -> bytes:
    if turn < TOOL_CALLS:
        item: Json = {
            "type": "function_call",
            "id": f"fc_{call_id}",
            "call_id": f"call_{call_id}",
            "name": "get_weather",
            "arguments": '{"city": "Paris"}',
            "status": "completed",
        }
    else:
        item = {
            "type": "message",
            "id": f"msg_{call_id}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Cold: take a coat.", "annotations": []}],
        }
    return orjson.dumps(
        {
            "id": f"resp_{call_id}",
            "object": "response",
            "created_at": 1_763_700_000,
            "model": "mock-replica",
            "status": "completed",
            "error": None,
            "incomplete_details": None,
            "output": [item],
            "usage": {"input_tokens": 60, "output_tokens": 12, "total_tokens": 72},
            "tools": [],
            "tool_choice": "auto",
            "parallel_tool_calls": True,
        }
    )


@dataclass
class Replica:
    speed: float
    cache: OrderedDict[str, int] = field(default_factory=OrderedDict)
    in_flight: int = 0
    calls: int = 0
    hits: int = 0
    dead: bool = False
    runner: Any = None
    transports: set[Any] = field(default_factory=set)

    def cost(self, key: str, turn: int) -> float:
        """Seconds this call takes here: the history not cached, the answer, the load."""
        cached = turn > 0 and self.cache.get(key) == turn - 1
        self.hits += cached
        prefill = CACHED_S if cached else PREFILL_S * (turn + 1)
        return self.speed * (prefill + DECODE_S) * max(1.0, self.in_flight / SLOTS)

    def remember(self, key: str, turn: int) -> None:
        self.cache[key] = turn
        self.cache.move_to_end(key)
        if len(self.cache) > 4096:
            self.cache.popitem(last=False)


async def serve_replicas(total_calls: int) -> None:
    from aiohttp import web

    replicas = [Replica(speed) for speed in SPEEDS]
    served = [0]
    ids = iter(range(1, 1 << 62))

    async def kill(replica: Replica) -> None:
        replica.dead = True
        for transport in replica.transports:
            transport.abort()
        await replica.runner.cleanup()

    def handler(replica: Replica) -> Any:
        async def respond(request: web.Request) -> web.StreamResponse:
            if request.transport is not None:
                replica.transports.add(request.transport)
            body = orjson.loads(await request.read())
            items = body["input"]
            key = str(items[0]["content"])
            turn = sum(1 for item in items if item.get("type") == "function_call_output")
            replica.calls += 1
            replica.in_flight += 1
            try:
                await asyncio.sleep(replica.cost(key, turn))
            finally:
                replica.in_flight -= 1
            replica.remember(key, turn)
            served[0] += 1
            dying = replicas[DYING]
            if not dying.dead and served[0] >= DIES_AT * total_calls:
                asyncio.get_running_loop().create_task(kill(dying))
            return web.Response(body=_call(next(ids), turn), content_type="application/json")

        async def models(request: web.Request) -> web.StreamResponse:
            return web.json_response({"object": "list", "data": [{"id": "mock-replica"}]})

        return respond, models

    ports = []
    for replica in replicas:
        app = web.Application()
        respond, models = handler(replica)
        app.router.add_post("/v1/responses", respond)
        app.router.add_get("/v1/models", models)
        replica.runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=0.1)
        await replica.runner.setup()
        site = web.TCPSite(replica.runner, "127.0.0.1", 0, backlog=1024)
        await site.start()
        ports.append(replica.runner.addresses[0][1])

    control = web.Application()

    async def stats(request: web.Request) -> web.StreamResponse:
        return web.json_response(
            [
                {"speed": r.speed, "calls": r.calls, "cache_hits": r.hits, "dead": r.dead}
                for r in replicas
            ]
        )

    control.router.add_get("/stats", stats)
    control_runner = web.AppRunner(control)
    await control_runner.setup()
    await web.TCPSite(control_runner, "127.0.0.1", 0).start()
    control_port = control_runner.addresses[0][1]
    print(f"READY {control_port} {','.join(map(str, ports))}", flush=True)
    await asyncio.Event().wait()


# --- the collector side ----------------------------------------------------------------------


class _Quiet:
    def start(self, summary: Any) -> None: ...
    def update(self, summary: Any) -> None: ...
    def message(self, text: str) -> None: ...
    def stop(self) -> None: ...


def write_tasks(path: Path, count: int) -> Path:
    rows = (
        orjson.dumps(
            {"responses_create_params": {"input": [{"role": "user", "content": f"City {i}?"}]}}
        )
        for i in range(count)
    )
    path.write_bytes(b"\n".join(rows) + b"\n")
    return path


async def run_routing(routing: str, urls: list[str], tasks: Path, out: Path) -> Json:
    from palaestra.agents.base import BoundAgent
    from palaestra.collection.assembly import build_agent, find, open_environment
    from palaestra.collection.collector import CollectConfig, collect
    from palaestra.models.pool import ModelPool
    from palaestra.spec import AgentSpec, EnvSpec, ModelConfig

    config = ModelConfig(
        urls=urls, api="responses", model="mock-replica", retry_delay=0.05, max_retries=3
    )
    pool = ModelPool(config, routing=routing)  # type: ignore[arg-type]
    spec = EnvSpec(name="weather")
    env, default = await open_environment(spec, find(spec), threads=CONCURRENCY)
    agent = build_agent(AgentSpec(options={"max_steps": TOOL_CALLS + 2}), default)
    runner = BoundAgent(agent, env, pool)
    started = time.perf_counter()
    try:
        summary = await collect(
            runner,
            CollectConfig(input=tasks, output=out, concurrency=CONCURRENCY, overwrite=True),
            _Quiet(),
        )
    finally:
        await pool.aclose()
        await env.aclose()
    seconds = time.perf_counter() - started
    rows = [orjson.loads(line) for line in out.read_bytes().splitlines() if line.strip()]
    failures_path = out.with_name(out.stem + "_failures.jsonl")
    failed = [
        orjson.loads(line)
        for line in (failures_path.read_bytes().splitlines() if failures_path.exists() else [])
    ]
    accounted = {(r["_ng_task_index"], r["_ng_rollout_index"]) for r in rows + failed}
    return {
        "routing": routing,
        "seconds": round(seconds, 3),
        "rollouts": len(rows),
        "failures": len(failed),
        "lost": summary.total - len(accounted),
        "rollouts_per_s": round(len(rows) / seconds, 2),
        "moved_rollouts": sum(1 for r in rows if r["_palaestra"].get("endpoint_moves")),
        "endpoints": summary.endpoints,
    }


def _stats(control: int) -> list[Json]:
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"http://127.0.0.1:{control}/stats", timeout=10) as answer:
        stats: list[Json] = json.loads(answer.read())
    return stats


def measure(rollouts: int = 400) -> Json:
    """The three routings over fresh endpoints each, the same tasks: one row per routing."""
    calls = rollouts * (TOOL_CALLS + 1)
    runs = []
    with tempfile.TemporaryDirectory(prefix="palaestra-pool-") as tmp:
        root = Path(tmp)
        tasks = write_tasks(root / "tasks.jsonl", rollouts)
        for routing in ROUTINGS:
            server = subprocess.Popen(
                [sys.executable, str(Path(__file__).resolve()), "--serve", str(calls)],
                stdout=subprocess.PIPE,
                text=True,
                env={**os.environ, "PYTHONPATH": str(HERE.parent)},
            )
            try:
                assert server.stdout is not None
                ready = server.stdout.readline().split()
                if not ready or ready[0] != "READY":
                    raise RuntimeError(f"the mock endpoints did not start: {ready}")
                control, ports = int(ready[1]), ready[2].split(",")
                urls = [f"http://127.0.0.1:{port}/v1" for port in ports]
                run = asyncio.run(run_routing(routing, urls, tasks, root / f"{routing}.jsonl"))
                replicas = _stats(control)
            finally:
                server.terminate()
                server.wait(10)
            hits = sum(r["cache_hits"] for r in replicas)
            served = sum(r["calls"] for r in replicas)
            run["cache_hit_rate"] = round(hits / served, 3) if served else None
            run["replicas"] = replicas
            runs.append(run)
    sticky = next(r for r in runs if r["routing"] == "sticky")
    for run in runs:
        run["vs_sticky"] = round(sticky["rollouts_per_s"] / run["rollouts_per_s"], 2)
    return {
        "rollouts": rollouts,
        "concurrency": CONCURRENCY,
        "speeds": list(SPEEDS),
        "slots": SLOTS,
        "dying": DYING,
        "dies_at": DIES_AT,
        "runs": runs,
    }


def table(results: Json) -> list[str]:
    """The markdown rows of ``measure``'s results."""
    lines = [
        "| routing | rollouts/s | sticky vs this | cache hits | rollouts moved | lost | failed | "
        "calls per endpoint (speed) |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    names = {"sticky": "sticky least-loaded (palaestra)", "hash": "session hash (NeMo Gym)"}
    for run in results["runs"]:
        per = ", ".join(
            f"{r['calls']} ({r['speed']:g}x{', died' if r['dead'] else ''})"
            for r in run["replicas"]
        )
        lines.append(
            f"| {names.get(run['routing'], run['routing'].replace('_', '-'))} "
            f"| {run['rollouts_per_s']:.1f} | {run['vs_sticky']:.2f}x "
            f"| {run['cache_hit_rate']:.0%} | {run['moved_rollouts']} | {run['lost']} "
            f"| {run['failures']} | {per} |"
        )
    return lines


def target(results: Json) -> tuple[str, str, bool]:
    """Sticky least-loaded at least 1.3x hashing's rollouts/s, and nothing lost by any."""
    by = {run["routing"]: run for run in results["runs"]}
    ratio = by["sticky"]["rollouts_per_s"] / by["hash"]["rollouts_per_s"]
    lost = sum(run["lost"] for run in results["runs"])
    text = (
        f"{ratio:.2f}x hashing, "
        f"{by['sticky']['rollouts_per_s'] / by['round_robin']['rollouts_per_s']:.2f}x "
        f"round-robin; {lost} rollouts lost of {len(results['runs']) * results['rollouts']:,} "
        "while an endpoint died"
    )
    return (
        "pool: sticky least-loaded ≥ 1.3x hashing, nothing lost",
        text,
        ratio >= 1.3 and not lost,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--rollouts", type=int, default=400)
    args = parser.parse_args()
    if args.serve is not None:
        try:
            import uvloop

            uvloop.install()
        except ImportError:
            pass
        asyncio.run(serve_replicas(args.serve))
        return
    results = measure(args.rollouts)
    print("\n".join(table(results)))
    print(target(results))


if __name__ == "__main__":
    main()
