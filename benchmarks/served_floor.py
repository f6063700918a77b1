"""The served floor: the exchanges of a served weather rollout between bare processes.

palaestra's served stack (``palaestra run`` with an env and an agent server, driven by
``palaestra collect --agent-url``) makes, per rollout: one ``/run`` from the collector to the
agent (TCP), two model calls from the agent (TCP, to the mock), and two calls from the agent to
the env server over a Unix socket (the tool call carrying the task, as palaestra's first call
does, and ``/verify``). This file makes the same exchanges, with the same bodies' shapes, between
three processes that do nothing else: no sessions, no tool dispatch, no verification logic, no
metrics, no validation, rows written as the agent answered them. What palaestra's served path
costs above this is its framework; this is what the shape costs on the machine (interpreter,
event loop, kernel).

Servers are bare asyncio protocols (uvloop when installed) with the mock model's minimal
HTTP/1.1 parsing (``mock_model.py``); clients are ``palaestra.transport.HttpClient``, the client
``floor.py --client transport`` uses. Roles, each its own process::

    python benchmarks/served_floor.py env SOCKET            # prints READY
    python benchmarks/served_floor.py agent ENV_SOCKET MODEL_URL   # prints READY <port>
    python benchmarks/served_floor.py collect AGENT_URL TASKS OUT --concurrency 32
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from urllib.parse import quote

import orjson
from mock_model import take_request

from palaestra.transport import HttpClient

Handler = Callable[[bytes, bytes, bytes], Awaitable[tuple[bytes, bytes]]]
"""(path, head, body) -> (extra header lines, answer body)."""

MODEL = "mock-weather"
TOOL_OUTPUT = {"city": "San Francisco", "weather_description": "The weather is cold."}
JSON = {"Content-Type": "application/json"}
SESSION = b"x-palaestra-session: floor-session-token-of-about-the-usual-length-0123456789\r\n"


def _http(extra: bytes, body: bytes) -> bytes:
    return (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n%s\r\n%s"
        % (len(body), extra, body)
    )


class BareHttp(asyncio.Protocol):
    """One keep-alive connection: requests parsed in order, each answered by ``handler``."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.buffer = b""
        self.transport: asyncio.Transport | None = None
        self.loop = asyncio.get_running_loop()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is no subclass

    def data_received(self, data: bytes) -> None:
        self.buffer = self.buffer + data if self.buffer else data
        while (request := take_request(self.buffer)) is not None:
            head, lowered, body, self.buffer = request
            self.loop.create_task(self._answer(head.split(b" ", 2)[1], lowered, body))

    async def _answer(self, path: bytes, head: bytes, body: bytes) -> None:
        extra, answer = await self.handler(path, head, body)
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(_http(extra, answer))

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None


async def env_handler(path: bytes, head: bytes, body: bytes) -> tuple[bytes, bytes]:
    """The tool call (the task's bytes first, as palaestra's seeding call) and ``/verify``."""
    if path == b"/verify":
        return b"", orjson.dumps({**orjson.loads(body), "reward": 1.0})
    at = head.find(b"x-palaestra-seed:")
    count = int(head[at + 17 : head.find(b"\r\n", at)]) if at >= 0 else 0
    orjson.loads(body[:count])  # the task the session would be seeded with
    orjson.loads(body[count:])  # the tool's arguments
    return SESSION, orjson.dumps(TOOL_OUTPUT)


def agent_handler(env_socket: str, model_url: str) -> Handler:
    env_url = "http+unix://" + quote(env_socket, safe="")
    client = HttpClient()

    async def post(url: str, body: bytes, headers: dict[str, str] = JSON) -> bytes:
        return (await client.request("POST", url, body=body, headers=headers)).body

    async def run(path: bytes, head: bytes, body: bytes) -> tuple[bytes, bytes]:
        task = orjson.loads(body)
        params = {**task["responses_create_params"], "model": MODEL}
        first = orjson.loads(await post(f"{model_url}/responses", orjson.dumps(params)))
        call = first["output"][0]
        seed = orjson.dumps(task)
        seeded = {**JSON, "x-palaestra-seed": str(len(seed))}
        tool = await post(f"{env_url}/get_weather", seed + call["arguments"].encode(), seeded)
        output = {"type": "function_call_output", "call_id": call["call_id"], "output": tool}
        history = [*params["input"], call, {**output, "output": tool.decode()}]
        second = orjson.loads(
            await post(f"{model_url}/responses", orjson.dumps({**params, "input": history}))
        )
        verify = await post(f"{env_url}/verify", orjson.dumps({**task, "response": second}))
        return b"", verify

    return run


async def serve(role: str, options: argparse.Namespace) -> None:
    loop = asyncio.get_running_loop()
    if role == "env":
        server = await loop.create_unix_server(
            lambda: BareHttp(env_handler), options.socket, backlog=4096
        )
        print("READY", flush=True)
    else:
        handler = agent_handler(options.env_socket, options.model_url.rstrip("/"))
        server = await loop.create_server(
            lambda: BareHttp(handler), "127.0.0.1", 0, backlog=4096, reuse_address=True
        )
        print(f"READY {server.sockets[0].getsockname()[1]}", flush=True)
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with server:
        await stop.wait()


async def collect(agent_url: str, tasks: str, out: str, concurrency: int) -> None:
    """POST each task to ``/run``, append each answer to ``out``: a row per line."""
    client = HttpClient()
    url = agent_url.rstrip("/") + "/run"
    started, done = time.perf_counter(), 0
    with open(tasks, "rb") as lines, open(out, "wb") as rows:

        async def worker() -> None:
            nonlocal done
            for raw in lines:
                answer = await client.request("POST", url, body=raw.rstrip(b"\n"), headers=JSON)
                orjson.loads(answer.body)  # a collector reads the row it files
                rows.write(answer.body + b"\n")
                done += 1

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    await client.aclose()
    elapsed = time.perf_counter() - started
    print("FLOOR " + orjson.dumps({"rollouts": done, "seconds": elapsed}).decode(), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    roles = parser.add_subparsers(dest="role", required=True)
    roles.add_parser("env").add_argument("socket")
    agent = roles.add_parser("agent")
    agent.add_argument("env_socket")
    agent.add_argument("model_url")
    collector = roles.add_parser("collect")
    for name in ("agent_url", "tasks", "out"):
        collector.add_argument(name)
    collector.add_argument("--concurrency", type=int, default=32)
    options = parser.parse_args()
    if options.role == "collect":  # as palaestra collect (and floor.py); its servers keep 700
        gc.set_threshold(1_000_000, *gc.get_threshold()[1:])
    factory = asyncio.new_event_loop
    with contextlib.suppress(ImportError):
        import uvloop

        factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        if options.role == "collect":
            runner.run(collect(options.agent_url, options.tasks, options.out, options.concurrency))
        else:
            try:
                runner.run(serve(options.role, options))
            except KeyboardInterrupt:
                sys.exit(0)


if __name__ == "__main__":
    main()
