"""``palaestra serve mcp`` over HTTP: live sessions are capped, idle ones end, none lock out.

Each test serves an environment with uvicorn on 127.0.0.1 and speaks to it over real HTTP:
raw JSON-RPC requests (a client that opens sessions in a loop, as a flood does) and the
``mcp`` package's own client (the well-behaved other client). What is live is read from the
server's ``GET /``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from palaestra import Environment, LocalEnvironmentClient, tool
from palaestra.environment.kinds.machine import MachineState, MachineTools
from palaestra.environment.sessions import Session
from palaestra.envs.counter.environment import Counter
from palaestra.serve.mcp_app import SessionMap, mcp_server, serve_mcp_http
from palaestra.types import JsonDict
from tests.support.network import free_port

mcp = pytest.importorskip("mcp")

import httpx2  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

VERSION = "2025-06-18"
JSON_RPC = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": VERSION,
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}


@dataclass
class Served:
    """A server under test: its base URL, a raw HTTP client, and its environment client."""

    url: str
    http: httpx2.AsyncClient
    client: LocalEnvironmentClient

    async def open(self) -> httpx2.Response:
        """An ``initialize`` with no session id: it opens a session (or is refused)."""
        return await self.http.post(f"{self.url}/mcp", json=INITIALIZE, headers=JSON_RPC)

    async def opened(self) -> str:
        answer = await self.open()
        assert answer.status_code == 200, answer.text
        session = answer.headers["mcp-session-id"]
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await self.http.post(f"{self.url}/mcp", json=note, headers=self.headers(session))
        return str(session)

    def headers(self, session: str) -> dict[str, str]:
        return {**JSON_RPC, "mcp-session-id": session, "mcp-protocol-version": VERSION}

    async def call(self, session: str, name: str, arguments: JsonDict | None = None) -> Any:
        """``tools/call``: the HTTP answer (its status, its JSON-RPC body)."""
        body = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments or {}},
        }
        return await self.http.post(f"{self.url}/mcp", json=body, headers=self.headers(session))

    async def health(self) -> JsonDict:
        answer = await self.http.get(f"{self.url}/")
        assert answer.status_code == 200
        health: JsonDict = answer.json()
        return health


@contextlib.asynccontextmanager
async def served(
    environment: Environment,
    *,
    task: JsonDict | None = None,
    max_boxes: int | None = None,
    **limits: Any,
) -> AsyncIterator[Served]:
    client = LocalEnvironmentClient(environment)
    sessions = SessionMap(client, task or {}, max_held=max_boxes)
    stop, port = asyncio.Event(), free_port()
    serving = asyncio.create_task(
        serve_mcp_http(
            mcp_server(sessions),
            sessions,
            host="127.0.0.1",
            port=port,
            token=None,
            label="test",
            stop=stop,
            **limits,
        )
    )
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx2.AsyncClient(timeout=20) as http:
            for _ in range(200):
                with contextlib.suppress(httpx2.TransportError):
                    await http.get(f"{url}/")
                    break
                await asyncio.sleep(0.05)
            yield Served(url, http, client)
    finally:
        stop.set()
        await serving
        await client.aclose()


@contextlib.asynccontextmanager
async def mcp_client(url: str) -> AsyncIterator[Any]:
    """The ``mcp`` package's own client on ``url``: initialised, ready to call."""
    async with (
        httpx2.AsyncClient() as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write, *_),
        mcp.ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def text_of(answer: Any) -> tuple[bool, str]:
    result = answer.json()["result"]
    return bool(result["isError"]), str(result["content"][0]["text"])


def test_a_client_opening_sessions_past_the_cap_does_not_lock_another_out() -> None:
    async def run() -> tuple[list[int], int, str, JsonDict]:
        async with served(Counter(), max_sessions=4) as server:
            flood = [(await server.open()).status_code for _ in range(40)]
            async with mcp_client(server.url) as other:
                await other.call_tool("increment", {"amount": 3})
                value = (await other.call_tool("read_counter", {})).content[0].text
                health = await server.health()
            first = await server.open()
            return flood, first.status_code, value, health

    flood, again, value, health = asyncio.run(run())
    assert flood == [200] * 40  # each new session took the place of the oldest idle one
    assert (again, value) == (200, "3")
    assert health["sessions"] <= 4 and health["max_sessions"] == 4
    assert health["ended_sessions"] >= 36


def test_an_evicted_session_is_gone_for_its_client_and_frees_its_environment_session() -> None:
    async def run() -> tuple[int, int, int, JsonDict]:
        async with served(Counter(), max_sessions=2) as server:
            # The first request the server sees comes from elsewhere, with another Host:
            # ending a session later must not depend on what it carried.
            stray = {**JSON_RPC, "Host": "elsewhere.example"}
            await server.http.post(f"{server.url}/nowhere", json=INITIALIZE, headers=stray)
            oldest = await server.opened()
            await server.call(oldest, "increment", {"amount": 1})
            held = len(server.client.sessions)
            for _ in range(2):
                newer = await server.opened()
                await server.call(newer, "increment")
            lost = await server.call(oldest, "read_counter")
            return held, lost.status_code, len(server.client.sessions), await server.health()

    held, lost, left, health = asyncio.run(run())
    assert (held, lost) == (1, 404)  # MCP: a 404 tells the client to open a new session
    assert left == 2 and health["sessions"] == 2


def test_a_flood_of_empty_sessions_pushes_out_empty_ones_before_one_holding_work() -> None:
    async def run() -> tuple[tuple[bool, str], JsonDict]:
        async with served(Counter(), max_sessions=4) as server:
            worker = await server.opened()
            await server.call(worker, "increment", {"amount": 7})  # then idle: the model thinks
            for _ in range(30):
                assert (await server.open()).status_code == 200
            return text_of(await server.call(worker, "read_counter")), await server.health()

    kept, health = asyncio.run(run())
    assert kept == (False, "7")
    assert health["sessions"] == 4 and health["environment_sessions"] == 1


class Gate(Environment):
    """A tool that waits for the test to open the gate: a session with a request in flight."""

    name = "gate"
    gate: asyncio.Event

    @tool
    async def wait(self) -> str:
        """Wait until the gate opens."""
        await self.gate.wait()
        return "opened"

    def verify(self, session: Session, response: JsonDict) -> float:
        return 0.0


def test_with_every_session_busy_a_new_one_is_503_with_retry_after_until_one_is_free() -> None:
    async def run() -> tuple[httpx2.Response, list[Any], int]:
        environment = Gate()
        environment.gate = asyncio.Event()
        async with served(environment, max_sessions=2) as server:
            busy = [await server.opened() for _ in range(2)]
            waiting = [asyncio.create_task(server.call(each, "wait")) for each in busy]
            while len(server.client.sessions) < 2:
                await asyncio.sleep(0.01)
            refused = await server.open()
            environment.gate.set()
            done = await asyncio.gather(*waiting)
            return refused, [text_of(answer) for answer in done], (await server.open()).status_code

    refused, done, later = asyncio.run(run())
    assert refused.status_code == 503 and refused.headers["retry-after"] == "5"
    assert refused.json()["error"]["message"] == (
        "this server's 2 MCP sessions are all busy (its --max-sessions); retry in 5 s"
    )
    assert done == [(False, "opened")] * 2  # the busy sessions were not touched
    assert later == 200


def test_an_idle_session_expires_and_its_environment_session_is_closed() -> None:
    async def run() -> tuple[int, int, int, JsonDict]:
        async with served(Counter(), session_ttl=0.4) as server:
            session = await server.opened()
            await server.call(session, "increment")
            held = len(server.client.sessions)
            for _ in range(100):  # no other request: the sweep alone ends it
                if not len(server.client.sessions):
                    break
                await asyncio.sleep(0.05)
            gone = await server.call(session, "read_counter")
            return held, len(server.client.sessions), gone.status_code, await server.health()

    held, left, gone, health = asyncio.run(run())
    assert (held, left, gone) == (1, 0, 404)
    assert health["sessions"] == 0 and health["ended_sessions"] == 1


def test_a_thousand_session_opens_leave_no_more_than_the_cap_alive() -> None:
    async def run() -> tuple[list[JsonDict], int]:
        async with served(Counter(), max_sessions=16) as server:
            seen = []
            for round_ in range(10):
                for _ in range(100):
                    assert (await server.open()).status_code == 200
                session = await server.opened()  # every round one also holds a counter
                await server.call(session, "increment")
                if round_ % 3 == 0:
                    seen.append(await server.health())
            return seen, len(server.client.sessions)

    seen, held = asyncio.run(run())
    assert [health["sessions"] for health in seen] == [16] * 4  # before: every one opened
    assert all(health["environment_sessions"] <= 16 for health in seen)
    assert seen[-1]["ended_sessions"] >= 1010 - 16 - 1
    assert held <= 16


@dataclass(slots=True)
class Work(MachineState):
    done: bool = False


class Bench(MachineTools, Environment):  # type: ignore[misc]  # close: sync and async
    """A machine environment whose work is a flag: each session holds a machine."""

    name = "bench"
    gate: asyncio.Event

    def seed(self, task: JsonDict) -> Work:
        return Work()

    @tool
    def solve(self, session: Session) -> str:
        """Do the work."""
        session.state.done = True
        return "done"

    @tool
    async def wait(self) -> str:
        """Wait until the gate opens."""
        await self.gate.wait()
        return "opened"

    def verify(self, session: Session, response: JsonDict) -> float:
        return 1.0 if session.state.done else 0.0


def test_a_machine_environment_holds_no_more_machines_than_its_cap() -> None:
    async def run() -> tuple[tuple[bool, str], int, tuple[bool, str], int, tuple[bool, str]]:
        environment = Bench()
        environment.gate = asyncio.Event()
        async with served(environment, max_boxes=1) as server:
            first, second = await server.opened(), await server.opened()
            waiting = asyncio.create_task(server.call(first, "wait"))
            while not len(server.client.sessions):
                await asyncio.sleep(0.01)
            refused = text_of(await server.call(second, "solve"))
            environment.gate.set()
            await waiting
            took = text_of(await server.call(second, "solve"))  # the first, idle, gave way
            lost = await server.call(first, "solve")
            third = await server.opened()
            again = text_of(await server.call(third, "solve"))
            return refused, len(server.client.sessions), took, lost.status_code, again

    refused, held, took, lost, again = asyncio.run(run())
    assert refused == (
        True,
        "this server's 1 machines (its --max-boxes) are all in use by sessions working now; "
        "try again in a few seconds",
    )
    assert (held, took, lost, again) == (1, (False, "done"), 404, (False, "done"))


def test_submit_over_mcp_checks_the_work_now_and_says_the_reward() -> None:
    async def run() -> tuple[tuple[bool, str], tuple[bool, str], tuple[bool, str]]:
        async with served(Bench()) as server:
            lazy, worker = await server.opened(), await server.opened()
            unsolved = text_of(await server.call(lazy, "submit"))
            await server.call(worker, "solve")
            solved = text_of(await server.call(worker, "submit"))
            after = text_of(await server.call(worker, "submit"))
            return unsolved, solved, after

    unsolved, solved, after = asyncio.run(run())
    end = "The episode is over (a new MCP session starts the task again)."
    assert unsolved == (False, f"Submitted and checked now: reward 0. {end}")
    assert solved == (False, f"Submitted and checked now: reward 1. {end}")
    assert after == (
        True,
        "You already submitted: the episode is over. Answer without calling tools.",
    )
