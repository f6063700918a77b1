"""1,024 concurrent rollouts through one gateway process, none lost.

Starts the benchmarks' instant model (``mock_model.py``, answering after ``--delay`` seconds
so that every rollout's call is at the model at once) and ``palaestra serve gateway`` in front
of it, each a process of its own; opens ``--rollouts`` rollouts over the admin routes and
drives them all at once, each a harness of ``--calls`` Chat Completions calls (a tool call,
the tool's output, then follow-ups, its whole history sent each time) with palaestra's HTTP
client. Then it reads every rollout back and counts it lost unless its calls are there,
answered, continuing one another, and its trajectory holds its own messages and no other
rollout's. Reports lost, wall time, and the gateway process' CPU and memory.

    python benchmarks/gateway_scale.py [--rollouts 1024] [--calls 3] [--delay 0.5] [--nofile 1024]

``--nofile`` starts the gateway with that soft limit on open files (a common default): each
call in flight holds two sockets in the gateway (the harness' and the model's).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import resource
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from palaestra.transport import HttpClient

HERE = Path(__file__).resolve().parent
_MARK = re.compile(rb"rollout-(\d{5})-")


@contextlib.contextmanager
def started(command: list[str], ready: str, nofile: int | None = None) -> Iterator[tuple[int, str]]:
    """A process of ``command`` and the first stdout line starting with ``ready``."""

    def limit() -> None:
        if nofile is not None:
            hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, hard))

    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, preexec_fn=limit)
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith(ready):
                yield process.pid, line[len(ready) :].strip()
                break
        else:
            raise SystemExit(f"{command[:4]} exited before it was ready")
    finally:
        process.terminate()
        process.wait(timeout=30)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory_mib(pid: int) -> dict[str, float]:
    status = Path(f"/proc/{pid}/status").read_text()
    found = dict(re.findall(r"^(VmRSS|VmHWM):\s+(\d+) kB", status, re.MULTILINE))
    return {name: int(kb) / 1024 for name, kb in found.items()}


def _tool_call(message: dict[str, Any]) -> dict[str, Any]:
    return {k: message[k] for k in ("role", "content", "tool_calls") if message.get(k) is not None}


async def harness(client: HttpClient, rollout: dict[str, Any], mark: str, calls: int) -> str | None:
    """One rollout's ``calls`` calls; what went wrong, or None."""
    url = f"{rollout['base_url']}/chat/completions"
    headers = {"Authorization": f"Bearer {rollout['api_key']}", "Content-Type": "application/json"}
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a weather bot."},
        {"role": "user", "content": f"{mark} What is the weather in Paris?"},
    ]
    for call in range(calls):
        body = orjson.dumps({"model": "m", "messages": messages})
        try:
            answer = await client.request("POST", url, body=body, headers=headers)
        except Exception as failure:  # a lost rollout is counted, not raised
            return f"call {call}: {failure!r:.200}"
        if answer.status != 200:
            return f"call {call}: HTTP {answer.status} {answer.body[:200]!r}"
        message = orjson.loads(answer.body)["choices"][0]["message"]
        if message.get("tool_calls"):
            messages.append(_tool_call(message))
            call_id = message["tool_calls"][0]["id"]
            messages.append({"role": "tool", "tool_call_id": call_id, "content": f"{mark} 24C"})
        else:
            messages.append({"role": "assistant", "content": message["content"]})
            messages.append({"role": "user", "content": f"{mark} Thanks. And tomorrow?"})
    return None


def check(record: dict[str, Any], index: int, count: int) -> str | None:
    """Why rollout ``index``'s record (of ``count`` calls) is not whole and its own, or None."""
    calls = record["calls"]
    if len(calls) != count:
        return f"{len(calls)} calls recorded"
    if [call["parent"] for call in calls] != [None, *range(count - 1)]:
        return f"parents {[call['parent'] for call in calls]}"
    if any(call["error"] for call in calls):
        return "a failed call"
    marks = {int(found) for found in _MARK.findall(orjson.dumps(record["response"]))}
    if marks != {index}:
        return f"the trajectory holds the messages of rollouts {sorted(marks)[:5]}"
    return None


async def drive(
    url: str, token: str, rollouts: int, calls: int, gateway_pid: int
) -> dict[str, Any]:
    client = HttpClient()
    admin = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    try:
        opened = []
        for _ in range(rollouts):
            answer = await client.request(
                "POST", f"{url}/admin/rollouts", body=b"{}", headers=admin
            )
            assert answer.status == 200, answer.body
            opened.append(orjson.loads(answer.body))
        memory_before = memory_mib(gateway_pid)
        cpu_before, wall_before = cpu_seconds(gateway_pid), time.monotonic()
        failures = await asyncio.gather(
            *(
                harness(client, rollout, f"rollout-{index:05d}-", calls)
                for index, rollout in enumerate(opened)
            )
        )
        wall = time.monotonic() - wall_before
        cpu = cpu_seconds(gateway_pid) - cpu_before
        memory_after = memory_mib(gateway_pid)
        lost: dict[int, str] = {i: failure for i, failure in enumerate(failures) if failure}
        for index, rollout in enumerate(opened):
            answer = await client.request(
                "GET", f"{url}/admin/rollouts/{rollout['id']}", headers=admin
            )
            record = orjson.loads(answer.body) if answer.status == 200 else None
            wrong = "gone" if record is None else check(record, index, calls)
            if wrong is not None and index not in lost:
                lost[index] = wrong
        stats = await client.request("GET", f"{url}/admin/stats", headers=admin)
    finally:
        await client.aclose()
    return {
        "rollouts": rollouts,
        "calls": rollouts * calls,
        "lost": len(lost),
        "lost_examples": {str(i): why for i, why in list(lost.items())[:5]},
        "wall_s": round(wall, 2),
        "gateway_cpu_s": round(cpu, 2),
        "gateway_cpu_ms_per_call": round(1000 * cpu / (rollouts * calls), 3),
        "gateway_rss_mib_before": round(memory_before["VmRSS"], 1),
        "gateway_rss_mib_after": round(memory_after["VmRSS"], 1),
        "gateway_peak_rss_mib": round(memory_after["VmHWM"], 1),
        "gateway_counts": orjson.loads(stats.body),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rollouts", type=int, default=1024)
    parser.add_argument("--calls", type=int, default=3, help="calls per rollout (at least 2)")
    parser.add_argument("--delay", type=float, default=0.5, help="the model's answer time (s)")
    parser.add_argument("--nofile", type=int, help="the gateway's soft limit on open files")
    args = parser.parse_args()
    token = secrets.token_urlsafe(16)
    mock = [sys.executable, str(HERE / "mock_model.py"), "--delay", str(args.delay)]
    with started(mock, "MOCK_READY ") as (_, port):
        gateway = [
            *(sys.executable, "-m", "palaestra", "serve", "gateway"),
            *("--model", f"http://127.0.0.1:{port}/v1", "--api", "responses", "--token", token),
        ]
        with started(gateway, "PALAESTRA_READY ", args.nofile) as (pid, ready):
            url = orjson.loads(ready)["url"]
            result = asyncio.run(drive(url, token, args.rollouts, args.calls, pid))
    print(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode())


if __name__ == "__main__":
    main()
