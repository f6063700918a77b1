"""Session capacity of one env server process, measured the way OpenEnv publishes its own.

One ``palaestra serve env`` process serves ``OneSecondTool`` (below): a tool that takes 1 s
(``asyncio.sleep(1)``). A load generator in a separate process (uvloop, palaestra's
``HttpClient``, the open-files limit raised) starts N sessions at once; each seeds a session,
calls the 1 s tool, verifies and closes. A session succeeds when all four answers are 200;
its latency runs from sending the seed to the close's answer. Reported for each N: success
rate, P50/P99/max latency, the server's CPU and peak memory, and the generator's CPU (it must
not be the bottleneck). OpenEnv: 2,048 sessions on 8 cores at 96.5% success, P99 1.97 s.

Run from the repository root: ``.venv/bin/python benchmarks/capacity.py [1000 2000 ...]``;
``benchmarks/run.py --phases capacity`` runs it as part of the suite.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from palaestra.environment.base import Environment  # noqa: E402
from palaestra.environment.sessions import Session  # noqa: E402
from palaestra.environment.tools import tool  # noqa: E402
from palaestra.types import JsonDict, Verdict  # noqa: E402

SIZES = (1000, 2000, 4000, 8000)
TOOL_SECONDS = 1.0
TICKS = os.sysconf("SC_CLK_TCK")
Json = dict[str, Any]


class OneSecondTool(Environment):
    """A tool that takes one second of waiting (no CPU), and a reward of 1."""

    name = "one_second_tool"

    @tool
    async def wait(self, seconds: float = TOOL_SECONDS) -> JsonDict:
        """Wait, then answer.

        Args:
            seconds: How long to wait.
        """
        await asyncio.sleep(seconds)
        return {"waited": seconds}

    async def verify(self, session: Session, response: JsonDict) -> Verdict:
        return Verdict(reward=1.0)


# --- the load generator (its own process) ----------------------------------------------------


async def drive(url: str, sessions: int) -> Json:
    """Start ``sessions`` sessions at once; their outcomes and latencies."""
    from palaestra.transport import HttpClient

    http = HttpClient(keepalive=120.0)
    task = {"responses_create_params": {"input": "wait a second"}}
    seed_body = orjson.dumps(task)
    tool_body = orjson.dumps({"seconds": TOOL_SECONDS})
    verify_body = orjson.dumps({**task, "response": {"output": []}})
    plain = {"Content-Type": "application/json"}
    latencies: list[float] = []
    errors: dict[str, int] = {}

    async def post(route: str, body: bytes, headers: dict[str, str]) -> Any:
        return await http.request(
            "POST",
            f"{url}{route}",
            body=body,
            headers=headers,
            connect_timeout=60.0,
            read_timeout=120.0,
        )

    async def session() -> None:
        started = time.perf_counter()
        try:
            seeded = await post("/seed_session", seed_body, plain)
            if seeded.status != 200:
                raise RuntimeError(f"seed {seeded.status}")
            headers = {**plain, "x-palaestra-session": seeded.headers["x-palaestra-session"]}
            for route, body in (("/wait", tool_body), ("/verify", verify_body)):
                answer = await post(route, body, headers)
                if answer.status != 200:
                    raise RuntimeError(f"{route} {answer.status}")
            closed = await post("/close_session", b"{}", headers)
            if closed.status != 200:
                raise RuntimeError(f"close {closed.status}")
        except Exception as error:  # counted by kind: a failed session, never a latency
            kind = f"{type(error).__name__}: {str(error)[:80]}"
            errors[kind] = errors.get(kind, 0) + 1
            return
        latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(session() for _ in range(sessions)))
    wall = time.perf_counter() - started
    await http.aclose()
    latencies.sort()
    return {
        "sessions": sessions,
        "ok": len(latencies),
        "success": len(latencies) / sessions,
        "p50_s": statistics.median(latencies) if latencies else None,
        "p99_s": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
        if latencies
        else None,
        "max_s": latencies[-1] if latencies else None,
        "wall_s": wall,
        "errors": errors,
    }


def drive_main(url: str, sessions: int) -> None:
    from palaestra._util.loop import run_on_fast_loop
    from palaestra.collection.runtime import collector_gc, raise_open_files_limit

    raise_open_files_limit()
    with collector_gc():
        result = run_on_fast_loop(drive(url, sessions))
    usage = os.times()
    result["generator_cpu_s"] = usage.user + usage.system
    print("CAPACITY " + orjson.dumps(result).decode(), flush=True)


# --- the server and one measurement ----------------------------------------------------------


def _cpu_and_peak(pid: int) -> tuple[float, int]:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / TICKS
    peak = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            peak = int(line.split()[1]) * 1024
    return cpu, peak


def start_server() -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "palaestra", "serve", "env", f"{__file__}:OneSecondTool"],
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("PALAESTRA_READY "):
            return process, str(orjson.loads(line.split(" ", 1)[1])["url"])
    process.kill()
    raise RuntimeError("the env server did not start")


def measure(sessions: int) -> Json:
    """One fresh server process, ``sessions`` sessions at once against it."""
    server, url = start_server()
    try:
        cpu_before, _ = _cpu_and_peak(server.pid)
        done = subprocess.run(
            [sys.executable, __file__, "--drive", url, str(sessions)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        cpu_after, peak = _cpu_and_peak(server.pid)
    finally:
        server.terminate()
        server.wait(30)
    line = next((x for x in done.stdout.splitlines() if x.startswith("CAPACITY ")), None)
    if line is None:
        return {"sessions": sessions, "error": (done.stderr or done.stdout)[-800:]}
    result: Json = orjson.loads(line.split(" ", 1)[1])
    result["server_cpu_s"] = cpu_after - cpu_before
    result["server_peak_rss_mb"] = peak / 2**20
    return result


def measure_all(sizes: tuple[int, ...] = SIZES) -> Json:
    runs = [measure(n) for n in sizes]
    return {"tool_seconds": TOOL_SECONDS, "cores": os.cpu_count(), "runs": runs}


def table(results: Json) -> list[str]:
    """The markdown rows of a ``measure_all`` result."""
    lines = [
        "| concurrent sessions | success | P50 | P99 | max | wall | server CPU | server peak RSS "
        "| generator CPU |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results["runs"]:
        if "error" in r:
            lines.append(f"| {r['sessions']:,} | error: {r['error'][-150:]} ||||||||")
            continue
        p50, p99, top = (
            f"{r[k]:.2f} s" if r[k] is not None else "—" for k in ("p50_s", "p99_s", "max_s")
        )
        lines.append(
            f"| {r['sessions']:,} | {r['success']:.1%} | {p50} | {p99} | {top} | "
            f"{r['wall_s']:.2f} s | {r['server_cpu_s']:.2f} s | {r['server_peak_rss_mb']:.0f} MB "
            f"| {r['generator_cpu_s']:.2f} s |"
        )
        for kind, count in r["errors"].items():
            lines.append(f"| | {count} failed: {kind} ||||||||")
    return lines


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--drive":
        drive_main(sys.argv[2], int(sys.argv[3]))
        return
    sizes = tuple(int(x) for x in sys.argv[1:]) or SIZES
    results = measure_all(sizes)
    print("\n".join(table(results)))


if __name__ == "__main__":
    main()
