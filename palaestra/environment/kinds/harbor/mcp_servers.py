"""The MCP servers a Harbor task declares (``[[environment.mcp_servers]]``), run in its machine.

A ``stdio`` server is its ``command`` and ``args`` started in the task's box, as the agent's
user in its workdir with ``[environment] env`` (as an agent in Harbor starts it in the
environment), its stdin and stdout the session's newline-delimited JSON-RPC (``box_streams``).
palaestra's MCP client (``mcp_connection.Connection``) speaks to it over those pipes. A server
is started for each agent phase (each step of a multi-step task) and stopped before the box
is sealed; what it did in the box is the agent's work, judged by the tests.

The tools of every task's servers are listed once (``list_servers``), in a box of each such
task started for that, and offered to the model beside the machine tools; a rollout calls
only its own task's. A server over HTTP is a service of its own and is refused at load.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar

from palaestra.environment.kinds.harbor.boxes import agent_view
from palaestra.environment.kinds.harbor.tasks import agent_context, box_spec
from palaestra.environment.kinds.mcp import MCPServerFailure, mcp_tool_spec
from palaestra.environment.kinds.mcp_connection import (
    Connection,
    MCPConnectionLost,
    ToolResult,
    Transport,
)
from palaestra.environment.tools import ToolSpec
from palaestra.errors import ConfigError, ToolError
from palaestra.sandbox.machines.provider import Box, Provider
from palaestra.wire.harbor import HarborTask, MCPServerConfig

START_TIMEOUT = 60.0
"""Seconds a server has to start and answer ``initialize``."""
CALL_TIMEOUT = 120.0
MESSAGE_CAP = 16 << 20
"""Bytes of one JSON-RPC line from a server."""
STDERR_TAIL = 600

T = TypeVar("T")


def box_streams(
    box: Box, argv: list[str]
) -> Callable[[], AbstractAsyncContextManager[tuple[Any, Any]]]:
    """An MCP transport: ``argv`` run in ``box`` (as the box's defaults say: an ``AgentView``
    gives the agent's user, workdir and env), its stdin and stdout the session's streams."""

    @contextlib.asynccontextmanager
    async def streams() -> AsyncIterator[tuple[Any, Any]]:
        import anyio
        import mcp_types
        from mcp.shared.message import SessionMessage

        stdin_read, stdin_write = os.pipe()
        try:
            process = await box.launch(argv, stdin=stdin_read, stream_limit=MESSAGE_CAP)
        except BaseException:
            os.close(stdin_write)
            raise
        finally:
            os.close(stdin_read)
        loop = asyncio.get_running_loop()
        stdin, _ = await loop.connect_write_pipe(
            asyncio.Protocol, os.fdopen(stdin_write, "wb", buffering=0)
        )
        read_send, read_receive = anyio.create_memory_object_stream[Any](0)
        write_send, write_receive = anyio.create_memory_object_stream[Any](0)
        errors = bytearray()

        async def replies() -> None:
            async with read_send:
                while line := await process.stdout.readline():
                    if not line.strip():
                        continue
                    message: Any
                    try:
                        parsed = mcp_types.jsonrpc_message_adapter.validate_json(
                            line, by_name=False
                        )
                        message = SessionMessage(parsed)
                    except ValueError as error:
                        message = error
                    await read_send.send(message)

        async def requests() -> None:
            async with write_receive:
                async for outgoing in write_receive:
                    text = outgoing.message.model_dump_json(by_alias=True, exclude_unset=True)
                    stdin.write(text.encode() + b"\n")

        async def stderr() -> None:
            if process.stderr is not None:
                while chunk := await process.stderr.read(4096):
                    errors.extend(chunk)
                    del errors[:-STDERR_TAIL]

        async with anyio.create_task_group() as group:
            group.start_soon(replies)
            group.start_soon(requests)
            group.start_soon(stderr)
            try:
                yield read_receive, write_send
            finally:
                stdin.close()
                process.kill()
                with contextlib.suppress(Exception):
                    async with asyncio.timeout(10):
                        await process.wait()
                process.close()
                group.cancel_scope.cancel()

    return streams


def server_argv(server: MCPServerConfig) -> list[str]:
    assert server.command is not None  # a stdio server (refused otherwise at load)
    return [server.command, *server.args]


async def start_servers(
    box: Box, servers: list[MCPServerConfig], task: str
) -> dict[str, Connection]:
    """Each of ``servers`` started in ``box`` and initialised, by name; ``MCPServerFailure``
    naming the task and the server (the others stopped) when one does not start."""
    started: dict[str, Connection] = {}
    try:
        for server in servers:
            connection = Connection(
                Transport(
                    command=tuple(server_argv(server)),
                    streams=box_streams(box, server_argv(server)),
                )
            )
            try:
                await connection.open(START_TIMEOUT)
            except MCPConnectionLost as lost:
                raise MCPServerFailure(
                    f"{task}: the MCP server '{server.name}' ({' '.join(server_argv(server))}) "
                    f"did not start in the task's machine: {lost}"
                ) from None
            started[server.name] = connection
    except BaseException:
        await stop_servers(started)
        raise
    return started


async def stop_servers(connections: dict[str, Connection]) -> None:
    for connection in list(connections.values()):
        with contextlib.suppress(Exception):
            await connection.close()
    connections.clear()


async def list_servers(box: Box, servers: list[MCPServerConfig], task: str) -> dict[str, list[Any]]:
    """The tools each of ``servers`` lists, started in ``box`` for that, by server name."""
    connections = await start_servers(box, servers, task)
    try:
        listed: dict[str, list[Any]] = {}
        for name, connection in connections.items():
            try:
                listed[name] = await connection.list_tools()
            except MCPConnectionLost as lost:
                raise MCPServerFailure(
                    f"{task}: the MCP server '{name}' did not list its tools: {lost}"
                ) from None
        return listed
    finally:
        await stop_servers(connections)


async def list_task_servers(
    provider: Provider, name: str, task: HarborTask
) -> dict[str, list[Any]]:
    """The tools of the MCP servers of ``task`` (folder ``name``), listed in a box of its
    image started for that, as the agent's user (``list_servers``)."""
    config = task.config
    image = await provider.build(agent_context(task), timeout=config.environment.build_timeout_sec)
    box = await provider.start(image, box_spec(task))
    try:
        return await list_servers(agent_view(box, task, None), config.environment.mcp_servers, name)
    finally:
        await box.close()


def in_thread(work: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """``work()`` run to its end on an event loop of a thread of its own (from plain code
    called while another loop runs: ``Environment.tools``); its result, or what it raised."""
    result: list[T] = []
    failure: list[BaseException] = []

    def body() -> None:
        try:
            result.append(asyncio.run(work()))
        except BaseException as error:
            failure.append(error)

    worker = threading.Thread(target=body, name="palaestra-harbor-mcp")
    worker.start()
    worker.join()
    if failure:
        raise failure[0]
    return result[0]


def listed_tools(
    machine: Mapping[str, ToolSpec], listed: Mapping[str, Mapping[str, list[Any]]]
) -> tuple[dict[str, ToolSpec], dict[str, dict[str, str]]]:
    """The tool specs offered to the model (the ``machine`` tools, and every tool ``listed``
    per task and server), and per task each of its tools' server. A tool named as a machine
    tool, or two different tools named alike, is a ``ConfigError`` naming both."""
    specs = dict(machine)
    origin: dict[str, str] = {}
    owners: dict[str, dict[str, str]] = {}
    for task, servers in listed.items():
        tools = owners.setdefault(task, {})
        for server, entries in servers.items():
            for entry in entries:
                spec = mcp_tool_spec(entry)
                where = f"{task}: the MCP server '{server}'"
                if entry.name in machine:
                    raise ConfigError(f"{where} lists '{entry.name}', a machine tool's name")
                if entry.name in specs and specs[entry.name].schema() != spec.schema():
                    raise ConfigError(
                        f"{where} and {origin[entry.name]} list two different tools named "
                        f"'{entry.name}'"
                    )
                specs[entry.name] = spec
                origin.setdefault(entry.name, where)
                tools[entry.name] = server
    return specs, owners


async def call_tool(
    connections: Mapping[str, Connection],
    tools: Mapping[str, str],
    name: str,
    arguments: Mapping[str, Any],
) -> ToolResult:
    """Call ``name`` on the server of the task's that lists it (``tools``); a ``ToolError``
    when the task has no such tool or its server cannot answer."""
    server = tools.get(name)
    if server is None:
        raise ToolError(f"this task has no tool '{name}'")
    connection = connections.get(server)
    if connection is None:
        raise ToolError(f"MCP tool '{name}': its server '{server}' is not running")
    try:
        return await connection.call(name, dict(arguments), CALL_TIMEOUT)
    except TimeoutError:
        raise ToolError(f"MCP tool '{name}' did not answer within {CALL_TIMEOUT:g}s") from None
    except MCPConnectionLost as lost:
        raise ToolError(f"MCP tool '{name}' failed: {lost}") from None
