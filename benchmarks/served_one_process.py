"""The whole served path in one process, for before/after comparisons of palaestra's code.

A served weather rollout crosses four processes (collector, agent server, env server, model);
their CPU, read side by side on 2 shared cores, moves 20-40% from one minute to the next, so a
change worth 2% cannot be seen there. Here the same parts run on one event loop in one process
and still talk over real sockets: the mock model (``mock_model.py``) on TCP, palaestra's env
server on a Unix socket, its agent server on TCP, and ``collect_async(agent_url=...)`` as the
collector. Two measures:

- ``cpu``: this process's CPU per rollout (the best of ``--reps`` collections after one to warm
  up); about 3% from run to run on a quiet machine.
- ``--instructions``: user-space instructions per rollout, counted by valgrind's cachegrind
  (valgrind must be installed): runs of two sizes, the difference divided by the extra
  rollouts, so start-up cancels out. Repeatable to about 0.3% whatever else the machine does;
  kernel work (the syscalls) is not in it. About a minute per tree.

``--baseline DIR`` measures an older checkout (``git worktree add DIR REV``) too, alternating.
Run from the repository root::

    .venv/bin/python benchmarks/served_one_process.py [--rollouts 3000] [--baseline DIR]
    .venv/bin/python benchmarks/served_one_process.py --instructions --baseline DIR
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CONCURRENCY = 32
CACHEGRIND = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]


async def served_cpu(rollouts: int, reps: int) -> list[float]:
    """Microseconds of CPU per rollout of each collection after the first (a warm-up)."""
    import mock_model
    from run import write_tasks

    from palaestra.assembly import build_agent, build_model, find, open_environment
    from palaestra.collection.api import collect_async
    from palaestra.serve.agent_app import agent_app
    from palaestra.serve.env_app import environment_app
    from palaestra.serve.guard import Guard
    from palaestra.serve.uvicorn_runner import make_server
    from palaestra.spec import EnvSpec, ServeSpec, validated
    from palaestra.transport import unix_url

    loop = asyncio.get_running_loop()
    root = Path(tempfile.mkdtemp(prefix="palaestra-one-process-"))
    counters = mock_model.Counters()
    mock = await loop.create_server(lambda: mock_model.MockHttp(counters, 0.0), "127.0.0.1", 0)
    model_url = f"http://127.0.0.1:{mock.sockets[0].getsockname()[1]}/v1"
    env_socket = socket.socket(socket.AF_UNIX)
    env_socket.bind(str(root / "env.sock"))
    env_socket.listen(4096)
    found = find(EnvSpec(name="weather"))
    assert found is not None
    env_server = make_server(Guard(environment_app(found.build(), dataset=[])))
    serving = [loop.create_task(env_server.serve(sockets=[env_socket]))]
    fields = {
        "kind": "agent",
        "env": {"url": unix_url(str(root / "env.sock"))},
        "model": {"backend": "openai", "url": model_url, "model": "mock-weather"},
    }
    spec = validated(ServeSpec, fields, "agent")
    while not env_server.started:
        await asyncio.sleep(0.01)
    env, default = await open_environment(spec.env, find(spec.env))
    app = agent_app(build_agent(spec.agent, default), env, build_model(spec.model))
    agent_socket = socket.create_server(("127.0.0.1", 0))
    agent_server = make_server(Guard(app))
    serving.append(loop.create_task(agent_server.serve(sockets=[agent_socket])))
    while not agent_server.started:
        await asyncio.sleep(0.01)
    agent_url = f"http://127.0.0.1:{agent_socket.getsockname()[1]}"
    tasks = write_tasks(root / "tasks.jsonl", rollouts)
    spent = []
    for rep in range(reps + 1):
        started = time.process_time()
        summary = await collect_async(
            agent_url=agent_url,
            input=tasks,
            output=root / f"rollouts-{rep}.jsonl",
            concurrency=CONCURRENCY,
        )
        if summary.scored != rollouts:
            raise RuntimeError(f"{summary.scored} of {rollouts} rollouts scored: {summary}")
        if rep:
            spent.append((time.process_time() - started) / rollouts * 1e6)
    agent_server.should_exit = env_server.should_exit = True
    await asyncio.gather(*serving)
    mock.close()
    return spent


def measure(tree: Path, rollouts: int, reps: int, instructions: bool) -> float:
    """``tree``'s figure: best CPU us per rollout, or instructions per rollout."""
    environment = {**os.environ, "PYTHONPATH": f"{tree}{os.pathsep}{HERE}"}
    command = [sys.executable, str(Path(__file__).resolve()), "--child"]
    if not instructions:
        done = subprocess.run(
            [*command, str(rollouts), str(reps)],
            env=environment,
            cwd=tempfile.gettempdir(),  # not the repository: palaestra comes from ``tree``
            capture_output=True,
            text=True,
            check=True,
        )
        return min(float(x) for x in done.stdout.split())
    counts = []
    for n in (rollouts // 4, rollouts // 4 + rollouts):
        done = subprocess.run(
            [*CACHEGRIND, *command, str(n), "1"],
            env=environment,
            cwd=tempfile.gettempdir(),
            capture_output=True,
            text=True,
            check=True,
        )
        found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
        if found is None:
            raise RuntimeError(f"no instruction count from valgrind: {done.stderr[-500:]}")
        counts.append(int(found.group(1).replace(",", "")))
    return (counts[1] - counts[0]) / (2 * rollouts)  # a warm-up and one collection each


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        import uvloop

        spent = uvloop.run(served_cpu(int(sys.argv[2]), int(sys.argv[3])))
        print(" ".join(f"{x:.1f}" for x in spent))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rollouts", type=int, default=3000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3, help="alternations with --baseline")
    parser.add_argument("--instructions", action="store_true")
    parser.add_argument("--baseline", type=Path, help="an older checkout, measured alternately")
    options = parser.parse_args()
    trees = {"this tree": HERE.parent}
    if options.baseline is not None:
        trees = {"baseline": options.baseline.resolve(), **trees}
    unit = "instructions" if options.instructions else "us CPU"
    rounds = options.rounds if options.baseline is not None else 1
    for round_ in range(rounds):
        for name, tree in trees.items():
            figure = measure(tree, options.rollouts, options.reps, options.instructions)
            print(f"round {round_ + 1} {name}: {figure:,.1f} {unit} per rollout", flush=True)


if __name__ == "__main__":
    main()
