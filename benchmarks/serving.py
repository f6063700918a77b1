"""Serving benchmarks (issue 4): server CPU per request, stack start-up, served-agent throughput.

1. ``env-cpu``: ``palaestra serve env weather`` in its own process answers get_weather tool
   calls and /verify; we read the server process's CPU time from /proc before and after and
   divide by the requests. (NeMo Gym 0.4's resources servers spend about 2-3 ms here.)
2. ``stack-ready``: wall time from ``palaestra run`` to its "ready" line for a three-server
   stack (env, model proxy, agent). (NeMo Gym 0.4: 20-24 s.)
3. ``agent-throughput``: ``palaestra collect`` of the weather tasks against an instant scripted
   model, in process vs through ``palaestra serve agent`` (--agent-url), in one run.
4. ``--served``: CPU per rollout of the served stacks (env + agent, env + model + agent), summed
   over every process exactly as ``run.py`` measures it, with ``--baseline DIR`` (a checkout of
   an older commit) run interleaved with this tree so the two see the same machine load; and
   the session capacity table (``capacity.py``). ``--write`` puts both into serving.md.

Run from the repository root: ``.venv/bin/python benchmarks/serving.py [--write]``, or
``.venv/bin/python benchmarks/serving.py --served --baseline /tmp/old-checkout --write``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from tests.support.scripted_model import (
    ScriptedModelServer,
    text_response,
    tool_call_response,
)

PALAESTRA = [sys.executable, "-m", "palaestra"]
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def start_server(*args: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [*PALAESTRA, "serve", *args, "--port", "0"],
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("PALAESTRA_READY "):
            return process, str(orjson.loads(line.split(" ", 1)[1])["url"])
    raise RuntimeError(f"server {args} did not start")


async def drive_env(url: str, requests: int, concurrency: int) -> None:
    async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http:
        async with http.post(f"{url}/seed_session", json={}) as seeded:
            token = seeded.headers["x-palaestra-session"]
        headers = {"x-palaestra-session": token}
        verify = {"responses_create_params": {"input": "x"}, "response": {"output": []}}
        queue = iter(range(requests))

        async def worker() -> None:
            for i in queue:
                route, body = (
                    ("get_weather", {"city": "Oslo"}) if i % 2 == 0 else ("verify", verify)
                )
                async with http.post(f"{url}/{route}", json=body, headers=headers) as answer:
                    assert answer.status == 200, await answer.text()
                    await answer.read()

        await asyncio.gather(*(worker() for _ in range(concurrency)))


def bench_env_cpu(requests: int = 20000, concurrency: int = 16) -> str:
    process, url = start_server("env", "weather")
    try:
        asyncio.run(drive_env(url, 500, concurrency))  # warm-up
        before, started = cpu_seconds(process.pid), time.perf_counter()
        asyncio.run(drive_env(url, requests, concurrency))
        cpu, wall = cpu_seconds(process.pid) - before, time.perf_counter() - started
    finally:
        process.terminate()
        process.wait()
    return (
        f"| env server CPU per request (tool call / verify, weather) | "
        f"{cpu / requests * 1000:.3f} ms | {requests} requests, {requests / wall:.0f} req/s "
        f"at concurrency {concurrency} |"
    )


def bench_stack_ready(model_url: str, tries: int = 3) -> str:
    times = []
    with tempfile.TemporaryDirectory() as root:
        stack = Path(root) / "stack.yaml"
        stack.write_text(f"""servers:
  env: {{kind: env, env: weather}}
  model: {{kind: model, backend: "{model_url}"}}
  agent: {{kind: agent, env: env, model: model}}
""")
        for _ in range(tries):
            started = time.perf_counter()
            process = subprocess.Popen(
                [*PALAESTRA, "run", str(stack)],
                cwd=root,
                text=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            assert process.stderr is not None
            for line in process.stderr:
                if "ready in" in line:
                    times.append(time.perf_counter() - started)
                    break
            process.send_signal(2)
            process.wait(30)
    return (
        f"| `palaestra run` three-server stack ready | {min(times):.2f} s | "
        f"best of {tries}: {', '.join(f'{t:.2f}' for t in times)} s |"
    )


def collect_rate(args: list[str], tasks: Path, out: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [
            *PALAESTRA,
            "collect",
            "--input",
            str(tasks),
            "--output",
            str(out),
            "--overwrite",
            "--concurrency",
            "32",
            *args,
        ],
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - started
    assert done.returncode == 0, done.stderr
    match = re.search(r"([\d.]+) rollouts/s", done.stdout)
    assert match, done.stdout
    return float(match.group(1)) if elapsed else 0.0


def bench_agent_throughput(model_url: str, rollouts: int = 2000) -> list[str]:
    with tempfile.TemporaryDirectory() as root:
        tasks = Path(root) / "tasks.jsonl"
        row = {"responses_create_params": {"input": "Weather in Oslo?"}}
        tasks.write_bytes((orjson.dumps(row) + b"\n") * rollouts)
        local = collect_rate(
            ["--env", "weather", "--model", model_url], tasks, Path(root) / "a.jsonl"
        )
        agent, url = start_server("agent", "--env", "weather", "--model", model_url)
        try:
            served = collect_rate(["--agent-url", url], tasks, Path(root) / "b.jsonl")
        finally:
            agent.terminate()
            agent.wait()
    return [
        f"| collect, agent in process (instant scripted model) | {local:.0f} rollouts/s | "
        f"{rollouts} weather rollouts, concurrency 32 |",
        f"| collect through `serve agent` (--agent-url) | {served:.0f} rollouts/s | "
        f"{served / local:.0%} of in-process |",
    ]


def instant_weather(params: dict[str, object]) -> dict[str, object]:
    items = params["input"] if isinstance(params["input"], list) else []
    if any(i.get("type") == "function_call_output" for i in items):
        return text_response("cold")
    return tool_call_response("get_weather", '{"city": "Oslo"}')


def served_cpu(tree: Path, spec: str, rollouts: int, root: Path) -> dict[str, float]:
    """Steady CPU ms per rollout of one served stack run from ``tree``, as run.py measures it."""
    import run as suite
    from procs import read_stat

    environment = {**os.environ, "PYTHONPATH": str(tree)}
    previous = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(tree)  # the stack's processes import palaestra from tree
    try:
        with suite.mock_model() as mock:
            stack = suite.PalaestraStack.start(root / "stack", spec.replace("MOCK", mock.url))
            try:
                pids = {s["name"]: s["pid"] for s in stack.servers}
                before = {name: read_stat(pid).cpu for name, pid in pids.items()}
                tasks = suite.write_tasks(root / "tasks.jsonl", rollouts)
                out = root / "out.jsonl"
                row = suite.measured_run(
                    "served",
                    suite.served_collect(stack.url("agent"), tasks, out),
                    rollouts,
                    mock,
                    stack_roots=stack.pids(),
                    cwd=root,  # not the repository: `-m palaestra` must import from tree
                    env=environment,
                    output=out,
                    timeout=600,
                )
                split = {
                    name: (read_stat(pid).cpu - before[name]) / rollouts * 1000
                    for name, pid in pids.items()
                }
            finally:
                stack.stop()
    finally:
        if previous is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = previous
    if "error" in row or not row["steady"]:
        raise RuntimeError(f"served run from {tree} failed: {row.get('error')}")
    return {"steady": row["steady"]["cpu_ms_per_rollout"], **split}


STACKS = {
    "env + agent": """servers:
  env: {kind: env, env: weather}
  agent: {kind: agent, env: env, model: "MOCK", model_name: mock-weather}
""",
    "env + model + agent": """servers:
  env: {kind: env, env: weather}
  model: {kind: model, backend: "MOCK", model_name: mock-weather}
  agent: {kind: agent, env: env, model: model}
""",
}


def bench_served(baseline: Path | None, rollouts: int, tries: int) -> list[str]:
    """Served CPU per rollout, this tree and ``baseline`` interleaved, ``tries`` each."""
    trees = {"this tree": Path(__file__).resolve().parents[1]}
    if baseline is not None:
        trees = {"baseline": baseline.resolve(), **trees}
    figures: dict[tuple[str, str], list[dict[str, float]]] = {}
    for attempt in range(tries):
        for label, spec in STACKS.items():
            for name, tree in trees.items():
                with tempfile.TemporaryDirectory() as root:
                    result = served_cpu(tree, spec, rollouts, Path(root))
                figures.setdefault((label, name), []).append(result)
                print(f"try {attempt + 1} {label} {name}: {result}", file=sys.stderr, flush=True)
    lines = [
        "| stack | tree | steady CPU ms per rollout (each try) | median | env | model | agent |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for (label, name), results in figures.items():
        steady = [r["steady"] for r in results]

        def median_of(key: str, results: list[dict[str, float]] = results) -> str:
            values = [r[key] for r in results if key in r]
            return f"{statistics.median(values):.3f}" if values else "—"

        lines.append(
            f"| {label} | {name} | {', '.join(f'{x:.3f}' for x in steady)} | "
            f"{statistics.median(steady):.3f} | {median_of('env')} | {median_of('model')} | "
            f"{median_of('agent')} |"
        )
    return lines


def served_report(baseline: Path | None, rollouts: int, tries: int) -> str:
    import capacity

    served = bench_served(baseline, rollouts, tries)
    sessions = capacity.table(capacity.measure_all())
    return (
        f"## Served path: CPU per rollout\n\n{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end. "
        f"`.venv/bin/python benchmarks/serving.py --served --rollouts {rollouts} --tries "
        f"{tries}{' --baseline DIR' if baseline else ''}`: the weather task against the "
        "instant mock model (`mock_model.py`, not counted), `palaestra collect --agent-url` at "
        "concurrency 32; CPU summed over every process of the stack and the collector, in the "
        "window from 10% to 90% of the rollouts done (run.py's *steady* figure). The env, model "
        "and agent columns are each server's own CPU over the whole run, per rollout (the "
        "collector's is the rest). Runs of the two trees alternate, so both see the same "
        "load from other jobs.\n\n"
        + "\n".join(served)
        + "\n\n## Session capacity (one env server process, a 1 s tool)\n\n"
        + "\n".join(sessions)
        + "\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--served", action="store_true", help="served CPU and capacity only")
    parser.add_argument("--baseline", type=Path, help="an older checkout, run interleaved")
    parser.add_argument("--rollouts", type=int, default=3000)
    parser.add_argument("--tries", type=int, default=3)
    options = parser.parse_args()
    if options.served:
        section = served_report(options.baseline, options.rollouts, options.tries)
        print(section)
        if options.write:
            path = Path(__file__).with_name("results") / "serving.md"
            kept = path.read_text().split("\n## Served path: CPU per rollout", 1)[0]
            path.write_text(kept.rstrip("\n") + "\n\n" + section)
        return
    with ScriptedModelServer(instant_weather) as model:
        lines = [bench_env_cpu(), bench_stack_ready(model.url), *bench_agent_throughput(model.url)]
    header = (
        f"# Serving benchmark\n\n{datetime.now(UTC):%Y-%m-%d}, {platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}. "
        f"`.venv/bin/python benchmarks/serving.py --write`\n\n"
        f"| measure | result | notes |\n|---|---|---|\n"
    )
    report = header + "\n".join(lines) + "\n"
    print(report)
    if options.write:
        Path(__file__).with_name("results").mkdir(exist_ok=True)
        Path(__file__).with_name("results").joinpath("serving.md").write_text(report)


if __name__ == "__main__":
    main()
