"""``palaestra serve mcp``: a real ``mcp`` client (ClientSession) using an environment's tools."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from palaestra import Environment, LocalEnvironmentClient, tool
from palaestra.environment.kinds.mcp import MCPEnvironment, MCPServer
from palaestra.envs.counter.environment import Counter
from palaestra.envs.weather.environment import Weather
from palaestra.http.announce import parse_ready_line
from palaestra.serve.mcp_app import SessionMap, mcp_server, serve_mcp_http
from tests.support.network import free_port

mcp = pytest.importorskip("mcp")

import httpx2  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

ROOT = str(Path(__file__).parents[2])
COMMAND = [sys.executable, "-m", "palaestra", "serve", "mcp"]
SERVED_ENV = {"PYTHONPATH": ROOT}


@contextlib.asynccontextmanager
async def stdio_session(*args: str) -> AsyncIterator[Any]:
    parameters = mcp.StdioServerParameters(
        command=COMMAND[0], args=[*COMMAND[1:], *args], env=SERVED_ENV
    )
    async with (
        mcp.stdio_client(parameters) as (read, write),
        mcp.ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@contextlib.asynccontextmanager
async def http_session(url: str, headers: dict[str, str] | None = None) -> AsyncIterator[Any]:
    async with (
        httpx2.AsyncClient(headers=headers or {}) as http,
        streamable_http_client(url, http_client=http) as (read, write, *_),
        mcp.ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def test_an_mcp_client_lists_and_calls_weathers_tools_and_gets_palaestras_own_results() -> None:
    cities = ["San Francisco", "Oslo"]

    async def over_mcp() -> tuple[list[tuple[str, Any, Any]], list[str]]:
        async with stdio_session("weather") as session:
            listed = (await session.list_tools()).tools
            tools = [(t.name, t.description, t.input_schema) for t in listed]
            texts = []
            for city in cities:
                result = await session.call_tool("get_weather", {"city": city})
                assert not result.is_error
                texts.append(result.content[0].text)
            return tools, texts

    async def in_process() -> tuple[list[tuple[str, Any, Any]], list[str]]:
        client = LocalEnvironmentClient(Weather())
        try:
            tools = [(t["name"], t["description"], t["parameters"]) for t in client.tools()]
            session = await client.seed({})
            texts = [await client.call_tool(session, "get_weather", {"city": c}) for c in cities]
            return tools, texts
        finally:
            await client.aclose()

    assert asyncio.run(over_mcp()) == asyncio.run(in_process())


def test_a_wrong_call_is_an_error_result_the_model_can_read() -> None:
    async def run() -> list[tuple[bool, str]]:
        async with stdio_session("counter") as session:
            answers = []
            for name, arguments in (("increment", {"amount": "x"}), ("reset_all", {})):
                result = await session.call_tool(name, arguments)
                answers.append((result.is_error, result.content[0].text))
            return answers

    (bad_type, bad_text), (unknown, unknown_text) = asyncio.run(run())
    assert bad_type and bad_text.startswith(
        "invalid arguments for tool 'increment': field 'amount'"
    )
    assert (
        unknown
        and unknown_text == "unknown tool 'reset_all'; available tools: increment, read_counter"
    )


@contextlib.contextmanager
def served_over_http(token: str | None = None) -> Iterator[str]:
    secret = {"PALAESTRA_SERVER_TOKEN": token} if token else {}
    no_token = [] if token else ["--no-token"]
    process = subprocess.Popen(
        [*COMMAND, "counter", "--transport", "http", "--port", "0", *no_token],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **SERVED_ENV, **secret},
    )
    try:
        assert process.stdout is not None
        facts = None
        for line in process.stdout:
            facts = parse_ready_line(line.strip())
            if facts is not None:
                break
        assert facts is not None, "the server exited before it was ready"
        yield f"{facts['url']}/mcp"
    finally:
        process.terminate()
        process.wait(15)


@pytest.fixture
def http_url() -> Iterator[str]:
    with served_over_http() as url:
        yield url


def test_each_mcp_session_over_http_has_its_own_state(http_url: str) -> None:
    async def run() -> tuple[str, str, str]:
        async with http_session(http_url) as first, http_session(http_url) as second:
            await first.call_tool("increment", {"amount": 5})
            await second.call_tool("increment", {"amount": 2})
            await first.call_tool("increment", {"amount": 1})
            again = await first.call_tool("read_counter", {})
            other = await second.call_tool("read_counter", {})
        async with http_session(http_url) as third:
            fresh = await third.call_tool("read_counter", {})
        return again.content[0].text, other.content[0].text, fresh.content[0].text

    assert asyncio.run(run()) == ("6", "2", "0")


class CounterOverMCP(MCPEnvironment):
    """The counter environment's tools, taken from `palaestra serve mcp counter`."""

    mcp_server = MCPServer.stdio([*COMMAND, "counter"], env=SERVED_ENV)

    def verify(self, session: Any, response: Any) -> float:
        return 0.0


def test_an_environment_takes_its_tools_from_palaestra_serve_mcp() -> None:
    async def run() -> tuple[list[str], str, str]:
        client = LocalEnvironmentClient(CounterOverMCP())
        try:
            first, second = await client.seed({}), await client.seed({})
            await client.call_tool(first, "increment", {"amount": 4})
            return (
                [tool["name"] for tool in client.tools()],
                await client.call_tool(first, "read_counter", {}),
                await client.call_tool(second, "read_counter", {}),
            )
        finally:
            await client.aclose()

    assert asyncio.run(run()) == (["increment", "read_counter"], "4", "0")


def test_over_http_a_token_keeps_out_a_client_without_it() -> None:
    async def run(url: str) -> str:
        with pytest.raises(BaseException) as refused:  # anyio wraps it in a group
            async with http_session(url) as session:
                await session.list_tools()
        async with http_session(url, {"Authorization": "Bearer s3cret"}) as session:
            await session.call_tool("increment", {"amount": 3})
            result = await session.call_tool("read_counter", {})
        assert "Server returned an error response" in repr(refused.value)  # its 401
        return str(result.content[0].text)

    with served_over_http(token="s3cret") as url:
        assert asyncio.run(run(url)) == "3"


def test_a_client_ending_its_mcp_session_closes_its_environment_session() -> None:
    async def run() -> tuple[int, int]:
        client = LocalEnvironmentClient(Counter())
        sessions = SessionMap(client, {})
        stop, port = asyncio.Event(), free_port()
        serving = asyncio.create_task(
            serve_mcp_http(
                mcp_server(sessions),
                sessions,
                host="127.0.0.1",
                port=port,
                token=None,
                label="counter",
                stop=stop,
            )
        )
        try:
            url = f"http://127.0.0.1:{port}/mcp"
            async with httpx2.AsyncClient() as probe:
                for _ in range(100):
                    with contextlib.suppress(httpx2.TransportError):
                        await probe.get(url)
                        break
                    await asyncio.sleep(0.05)
            async with http_session(url) as session:
                await session.call_tool("increment", {"amount": 1})
                during = len(client.sessions)
            return during, len(client.sessions)  # the client sent DELETE as it left
        finally:
            stop.set()
            await serving
            await client.aclose()

    assert asyncio.run(run()) == (1, 0)


class Fragile(Environment):
    """A tool with a bug."""

    @tool
    def divide(self, numerator: int, denominator: int) -> float:
        """Divide two numbers.

        Args:
            numerator: The dividend.
            denominator: The divisor.
        """
        return numerator / denominator

    def verify(self, session: Any, response: Any) -> float:
        return 0.0


def test_a_tool_that_fails_is_an_error_result_naming_the_failures_kind() -> None:
    async def run() -> tuple[bool, str, str]:
        client = LocalEnvironmentClient(Fragile())
        try:
            async with mcp.Client(mcp_server(SessionMap(client, {}))) as session:
                good = await session.call_tool("divide", {"numerator": 6, "denominator": 3})
                bad = await session.call_tool("divide", {"numerator": 1, "denominator": 0})
            return bad.is_error, good.content[0].text, bad.content[0].text
        finally:
            await client.aclose()

    is_error, good, bad = asyncio.run(run())
    assert (is_error, good) == (True, "2.0")
    assert bad.startswith("the tool failed (tool_error): tool 'divide' raised ZeroDivisionError")
