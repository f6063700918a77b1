"""Tools from a real MCP server (``tests/support/mcp_notes_server.py``, the ``mcp`` package)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest
from click.testing import CliRunner

from palaestra import LocalEnvironmentClient, tool
from palaestra.cli.review import test_env_command as palaestra_test
from palaestra.environment.kinds.mcp import MCPServer, MCPServerFailure, MCPServerUnreachable
from palaestra.errors import ConfigError, ToolCallRejected
from palaestra.http.runner import BackgroundServer
from palaestra.remote.env import RemoteEnvironmentClient
from palaestra.serve.env_app import environment_app
from palaestra.types import FailureKind
from tests.models.test_local import needs_local
from tests.support.mcp_notes_env import SERVER, BrokenNotes, Notes, SharedNotes, http_notes
from tests.support.network import free_port

pytest.importorskip("mcp")


def test_the_servers_tools_join_the_environments_own_with_the_servers_schemas() -> None:
    async def run() -> list[dict[str, object]]:
        client = LocalEnvironmentClient(Notes())
        try:
            return client.tools()
        finally:
            await client.aclose()

    tools = {entry["name"]: entry for entry in asyncio.run(run())}
    assert set(tools) == {"word_count", "add_note", "list_notes", "fail", "wait", "crash"}
    parameters = tools["add_note"]["parameters"]
    assert parameters["required"] == ["text"]  # type: ignore[index]
    assert parameters["properties"]["pinned"] == {"default": False, "type": "boolean"}  # type: ignore[index]
    assert parameters["additionalProperties"] is False  # type: ignore[index]
    assert tools["add_note"]["description"] == "Add a note to the notebook."


def test_a_server_per_session_keeps_each_rollouts_notes_apart() -> None:
    async def run() -> tuple[str, str, str, float, float]:
        client = LocalEnvironmentClient(Notes())
        try:
            first, second = await client.seed({"note": "milk"}), await client.seed({"note": "x"})
            added = await client.call_tool(first, "add_note", {"text": "milk"})
            mine = await client.call_tool(first, "list_notes", {})
            theirs = await client.call_tool(second, "list_notes", {})
            won = await client.verify(first, {"note": "milk"}, {})
            lost = await client.verify(second, {"note": "x"}, {})
            return added, mine, theirs, won.reward, lost.reward
        finally:
            await client.aclose()

    assert asyncio.run(run()) == ("1 notes", "milk", "", 1.0, 0.0)


def test_a_shared_server_is_seen_by_every_rollout() -> None:
    async def run() -> str:
        client = LocalEnvironmentClient(SharedNotes())
        try:
            first, second = await client.seed({"note": "a"}), await client.seed({"note": "b"})
            await client.call_tool(first, "add_note", {"text": "from the first"})
            return await client.call_tool(second, "list_notes", {})
        finally:
            await client.aclose()

    assert asyncio.run(run()) == "from the first"


def test_arguments_against_the_servers_schema_go_back_to_the_model_before_any_call() -> None:
    async def run() -> list[str]:
        client = LocalEnvironmentClient(Notes())
        messages = []
        try:
            session = await client.seed({"note": "n"})
            for arguments in ({}, {"text": 3}, {"text": "ok", "colour": "red"}):
                with pytest.raises(ToolCallRejected) as rejected:
                    await client.call_tool(session, "add_note", arguments)
                messages.append(str(rejected.value))
            messages.append(await client.call_tool(session, "list_notes", {}))
        finally:
            await client.aclose()
        return messages

    missing, wrong_type, extra, notes = asyncio.run(run())
    assert missing.startswith("invalid arguments for tool 'add_note'")
    assert "'text' is a required property" in missing
    assert "text: 3 is not of type 'string'" in wrong_type
    assert "'colour' was unexpected" in extra
    assert notes == ""  # none of them reached the server


def test_an_error_result_a_slow_call_and_a_dead_server_are_tool_errors_the_model_reads() -> None:
    async def run() -> list[str]:
        client = LocalEnvironmentClient(Notes())
        messages = []
        try:
            session = await client.seed({"note": "n"})
            for name, arguments in (
                ("fail", {"reason": "the notebook is full"}),
                ("wait", {"seconds": 10}),
                ("crash", {}),
                ("list_notes", {}),
            ):
                with pytest.raises(ToolCallRejected) as rejected:
                    await client.call_tool(session, name, arguments)
                messages.append(str(rejected.value))
        finally:
            await client.aclose()
        return messages

    failed, slow, crashed, after = asyncio.run(run())
    assert "the notebook is full" in failed
    assert slow == "MCP tool 'wait' did not answer within 3s"
    assert crashed.startswith("MCP tool 'crash' failed:")
    assert after.startswith("MCP tool 'list_notes' failed:")


def test_a_server_that_does_not_start_is_an_explicit_failure_naming_its_stderr() -> None:
    with pytest.raises(MCPServerUnreachable) as unreachable:
        LocalEnvironmentClient(BrokenNotes())
    assert "no notebook here" in str(unreachable.value)
    assert unreachable.value.kind == FailureKind.ENV_ERROR


def test_a_rollouts_own_server_that_does_not_start_fails_the_rollout_as_env_error() -> None:
    environment = Notes()
    environment.tools()  # listed with the working server; the next ones fail to start

    class Later(Notes):
        mcp_server = BrokenNotes.mcp_server

    environment.__class__ = Later  # the instance keeps the tools it listed

    async def run() -> None:
        client = LocalEnvironmentClient(environment)
        try:
            await client.seed({"note": "n"})
        finally:
            await client.aclose()

    with pytest.raises(MCPServerFailure) as failure:
        asyncio.run(run())
    assert failure.value.kind == FailureKind.ENV_ERROR
    assert "did not start" in str(failure.value)


@pytest.fixture
def http_server() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, SERVER, "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(10)


def test_tools_from_a_server_over_streamable_http(http_server: str) -> None:
    async def run() -> tuple[str, float]:
        client = LocalEnvironmentClient(http_notes(http_server)())
        try:
            session = await client.seed({"note": "bread"})
            await client.call_tool(session, "add_note", {"text": "bread", "pinned": True})
            return (
                await client.call_tool(session, "list_notes", {}),
                (await client.verify(session, {"note": "bread"}, {})).reward,
            )
        finally:
            await client.aclose()

    assert asyncio.run(run()) == ("bread", 1.0)


def test_palaestra_test_replays_the_gold_calls_through_the_server(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_bytes(b"".join(orjson.dumps(_task(note)) + b"\n" for note in ("eggs", "tea")))
    module = Path(__file__).parents[2] / "support" / "mcp_notes_env.py"
    result = CliRunner().invoke(
        palaestra_test, [f"{module}:Notes", "--input", str(tasks), "--no-model", "--json"]
    )
    assert result.exit_code == 0, result.output
    checks = {check["name"]: check for check in orjson.loads(result.output)["checks"]}
    assert checks["oracle"]["status"] == "pass", checks["oracle"]
    assert checks["null agent"]["status"] == "pass", checks["null agent"]


def _task(note: str) -> dict[str, object]:
    prompt = f"Add a note saying '{note}' to the notebook."
    return {
        "responses_create_params": {"input": [{"role": "user", "content": prompt}]},
        "note": note,
    }


@pytest.mark.local_model
@needs_local
def test_the_embedded_model_collects_through_the_servers_tools_and_every_server_stops(
    tmp_path: Path,
) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_bytes(orjson.dumps(_task("eggs")) + b"\n")
    module = Path(__file__).parents[2] / "support" / "mcp_notes_env.py"
    result = CliRunner().invoke(
        palaestra_test, [f"{module}:Notes", "--input", str(tasks), "--smoke-tasks", "1", "--json"]
    )
    assert result.exit_code == 0, result.output
    checks = {check["name"]: check for check in orjson.loads(result.output)["checks"]}
    assert checks["smoke run"]["status"] == "pass", checks["smoke run"]
    assert checks["sessions closed"]["status"] == "pass", checks["sessions closed"]


def test_an_env_server_serves_the_mcp_tools_to_a_remote_client() -> None:
    async def run(url: str) -> tuple[list[str], str, float]:
        remote = await RemoteEnvironmentClient.connect(url)
        try:
            session = await remote.seed({"note": "jam"})
            added = await remote.call_tool(session, "add_note", {"text": "jam"})
            verdict = await remote.verify(session, {"note": "jam"}, {"output": []})
            return [t["name"] for t in remote.tools()], added, verdict.reward
        finally:
            await remote.aclose()

    with BackgroundServer(environment_app(Notes())) as server:
        names, added, reward = asyncio.run(run(server.url))
    assert names == ["word_count", "add_note", "list_notes", "fail", "wait", "crash"]
    assert (added, reward) == ("1 notes", 1.0)


def test_an_author_can_take_some_of_the_servers_tools_and_a_clash_is_one_line() -> None:
    command = [sys.executable, SERVER, "stdio"]

    class Chosen(Notes):
        mcp_server = MCPServer.stdio(command, tools=["list_notes", "add_note"])

    class Missing(Notes):
        mcp_server = MCPServer.stdio(command, tools=["add_note", "delete_note"])

    class Clash(Notes):
        @tool
        def add_note(self, text: str) -> str:
            """Add a note here instead.

            Args:
                text: The note.
            """
            return text

    assert [entry["name"] for entry in Chosen().tools()] == [
        "word_count",
        "add_note",
        "list_notes",
    ]
    with pytest.raises(ConfigError, match="the MCP server lists no tool delete_note"):
        Missing().tools()
    with pytest.raises(ConfigError, match="the MCP tool 'add_note' has the name of one of its"):
        Clash().tools()
    with pytest.raises(ConfigError, match="needs a command"):
        MCPServer.stdio([])


def test_a_shared_server_that_died_is_started_again_for_the_next_rollout() -> None:
    async def run() -> tuple[str, str, str]:
        client = LocalEnvironmentClient(SharedNotes())
        try:
            first = await client.seed({"note": "a"})
            await client.call_tool(first, "add_note", {"text": "before"})
            with pytest.raises(ToolCallRejected) as crashed:
                await client.call_tool(first, "crash", {})
            with pytest.raises(ToolCallRejected) as after:
                await client.call_tool(first, "list_notes", {})
            second = await client.seed({"note": "b"})
            return (
                str(crashed.value),
                str(after.value),
                await client.call_tool(second, "list_notes", {}),
            )
        finally:
            await client.aclose()

    crashed, after, fresh = asyncio.run(run())
    assert crashed.startswith("MCP tool 'crash' failed: MCPError: Connection closed")
    assert after.startswith("MCP tool 'list_notes' failed: the connection ended")
    assert fresh == ""  # a new server: its notebook is empty
