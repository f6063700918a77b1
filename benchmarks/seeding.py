"""A served session's seed sent on its own or with its first call: CPU of both sides.

One ``palaestra run`` stack with a weather env server (reached on its Unix socket, as a
stack's agent reaches it); a client process does ``--rollouts`` env rollouts at concurrency
32 with ``RemoteEnvironmentClient`` (seed, get_weather, verify asking to close, close), with
``seed_with_first_call`` on and off in turn, the order alternating each try. The server's CPU
is read from /proc around each client run; the client's is its own ``process_time`` around
the rollouts (start-up and imports not counted).

Run from the repository root: ``.venv/bin/python benchmarks/seeding.py [--tries 6]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
TASKS = HERE.parent / "palaestra" / "envs" / "weather" / "tasks.jsonl"
CONCURRENCY = 32
RESPONSE = {
    "id": "r",
    "output": [
        {"type": "function_call", "name": "get_weather", "arguments": '{"city": "Paris"}'},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "."}]},
    ],
}


async def client_cpu(url: str, along: bool, rollouts: int) -> float:
    """Seconds of this process's CPU for ``rollouts`` env rollouts against ``url``."""
    from palaestra.remote.env import RemoteEnvironmentClient

    task = orjson.loads(TASKS.read_text().splitlines()[0])
    remote = await RemoteEnvironmentClient.connect(url, seed_with_first_call=along)
    left = rollouts

    async def worker() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            session = await remote.seed(task)
            await remote.call_tool(session, "get_weather", {"city": "Paris"})
            verdict = await remote.verify(session, task, RESPONSE)
            assert verdict.reward == 1.0, verdict
            await remote.close(session)

    started = time.process_time()
    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    spent = time.process_time() - started
    await remote.aclose()
    return spent


def measure(tries: int, rollouts: int) -> dict[bool, list[tuple[float, float]]]:
    """(server, client) microseconds per rollout for each setting, ``tries`` each."""
    import run as suite
    from procs import read_stat

    figures: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    with tempfile.TemporaryDirectory() as root:
        stack = suite.PalaestraStack.start(
            Path(root) / "stack", "servers:\n  env: {kind: env, env: weather}\n"
        )
        try:
            [server] = stack.servers
            from palaestra.transport import unix_url

            url = unix_url(server["unix_socket"])
            for attempt in range(tries):
                for along in (True, False) if attempt % 2 == 0 else (False, True):
                    before = read_stat(server["pid"]).cpu
                    command = [sys.executable, __file__, "--client", url, str(int(along))]
                    done = subprocess.run(
                        [*command, "--rollouts", str(rollouts)],
                        capture_output=True,
                        text=True,
                        check=True,
                    )
                    spent = read_stat(server["pid"]).cpu - before
                    client = float(done.stdout.split()[-1])
                    figures[along].append((spent / rollouts * 1e6, client / rollouts * 1e6))
                    print(f"try {attempt + 1} along={along}: {figures[along][-1]}", flush=True)
        finally:
            stack.stop()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tries", type=int, default=6)
    parser.add_argument("--rollouts", type=int, default=4000)
    parser.add_argument("--client", nargs=2, metavar=("URL", "ALONG"), help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.client:
        import uvloop

        url, along = options.client
        print(uvloop.run(client_cpu(url, along == "1", options.rollouts)))
        return
    sys.path.insert(0, str(HERE))
    figures = measure(options.tries, options.rollouts)
    print("| seed | server us per rollout (median, range) | client us per rollout |")
    print("|---|---|---|")
    for along, label in ((False, "on its own"), (True, "with the first call")):
        server = [s for s, _ in figures[along]]
        client = [c for _, c in figures[along]]
        print(
            f"| {label} | {statistics.median(server):.0f} ({min(server):.0f}-{max(server):.0f}) "
            f"| {statistics.median(client):.0f} ({min(client):.0f}-{max(client):.0f}) |"
        )


if __name__ == "__main__":
    main()
