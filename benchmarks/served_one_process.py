"""The whole served path in one process: the harness ``compare.py --served`` measures.

A served weather rollout crosses four processes (collector, agent server, env server, model);
their CPU, read side by side on 2 shared cores, moves 20-40% from one minute to the next, so a
change worth 2% cannot be seen there. Here the same parts run on one event loop in one process
and still talk over real sockets: the mock model (``mock_model.py``) on TCP, palaestra's env
server on a Unix socket, its agent server on TCP, and ``collect_async(agent_url=...)`` as the
collector. It prints this process's CPU per rollout of each collection after a first one (a
warm-up); on a quiet machine runs agree within about 3%. Under valgrind, the difference of two
sizes gives user-space instructions per rollout, repeatable within 0.3% whatever else the
machine does (``compare.py --served --instructions``)::

    python benchmarks/served_one_process.py ROLLOUTS REPS    # with palaestra on the path
"""

from __future__ import annotations

import asyncio
import socket
import sys
import tempfile
import time
from pathlib import Path

CONCURRENCY = 32


async def served_cpu(rollouts: int, reps: int) -> list[float]:
    """Microseconds of CPU per rollout of each collection after the first (a warm-up)."""
    import mock_model
    from run import write_tasks

    try:  # this layout
        from palaestra.collection.assembly import build_agent, build_model, find, open_environment
        from palaestra.http.guard import Guard
        from palaestra.http.runner import make_server
        from palaestra.run.collect import collect_async
    except ImportError:  # a base checkout from before palaestra/ was rebuilt into rooms
        from palaestra.assembly import (  # type: ignore[no-redef]
            build_agent,
            build_model,
            find,
            open_environment,
        )
        from palaestra.collection.api import collect_async  # type: ignore[no-redef]
        from palaestra.serve.guard import Guard  # type: ignore[no-redef]
        from palaestra.serve.uvicorn_runner import make_server  # type: ignore[no-redef]
    from palaestra.serve.agent_app import agent_app
    from palaestra.serve.env_app import environment_app
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


def main() -> None:
    import uvloop

    spent = uvloop.run(served_cpu(int(sys.argv[1]), int(sys.argv[2])))
    print(" ".join(f"{x:.1f}" for x in spent))


if __name__ == "__main__":
    main()
