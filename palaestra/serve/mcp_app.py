"""An environment's tools served over MCP (``palaestra serve mcp``), for any MCP client.

``tools/list`` lists the environment's tools with their JSON schemas; ``tools/call`` runs one
through the same in-process client a collection uses (arguments validated, time limits, the
failure mapping), so an MCP client gets what palaestra's own agents get. Each MCP session
(a stdio connection, or an ``Mcp-Session-Id`` over streamable HTTP) is one palaestra session,
seeded with the served task on its first call and closed when the MCP session goes: two
clients never share state.

What the model got wrong (an unknown tool, invalid arguments, a ``ToolError``) is a result
with ``isError`` and the message, as the MCP specification asks for errors a model can
correct; a tool that failed (palaestra would fail the rollout: ``tool_error``, ``timeout``)
is an ``isError`` result too, naming the failure's kind.
"""

from __future__ import annotations

import asyncio
import sys
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

from palaestra.environment.client import LocalEnvironmentClient, tool_output_text
from palaestra.errors import ConfigError, ToolCallRejected
from palaestra.types import JsonDict

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server
    from mcp.types import CallToolResult

    from palaestra.spec import EnvSpec

__all__ = ["SessionMap", "mcp_server", "serve_mcp", "serve_mcp_http", "serve_mcp_stdio"]


class SessionMap:
    """The palaestra session of each live MCP session, seeded on first use."""

    def __init__(self, client: LocalEnvironmentClient, task: JsonDict) -> None:
        self.client = client
        self.task = task
        self._ids: weakref.WeakKeyDictionary[object, str] = weakref.WeakKeyDictionary()
        self._seeding: weakref.WeakKeyDictionary[object, asyncio.Lock] = weakref.WeakKeyDictionary()
        self._closing: set[asyncio.Task[None]] = set()
        self._by_mcp_id: dict[str, str] = {}

    async def session_of(self, mcp_session: object) -> str:
        """The palaestra session of ``mcp_session`` (seeded now if it has none)."""
        known = self._ids.get(mcp_session)
        if known is not None:
            return known
        lock = self._seeding.setdefault(mcp_session, asyncio.Lock())
        async with lock:
            known = self._ids.get(mcp_session)
            if known is None:
                known = await self.client.seed(dict(self.task))
                self._ids[mcp_session] = known
                mcp_id = getattr(mcp_session, "session_id", None)
                if isinstance(mcp_id, str):
                    self._by_mcp_id[mcp_id] = known
                weakref.finalize(mcp_session, self._close_later, asyncio.get_running_loop(), known)
            return known

    async def release(self, mcp_id: str) -> None:
        """Close the session of the MCP session ``mcp_id`` (its client ended it: DELETE)."""
        session_id = self._by_mcp_id.pop(mcp_id, None)
        if session_id is not None:
            await self._close(session_id)

    def _close_later(self, loop: asyncio.AbstractEventLoop, session_id: str) -> None:
        """Close a palaestra session whose MCP session is gone (from a finaliser: schedule)."""

        def start() -> None:
            task = loop.create_task(self._close(session_id))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

        if not loop.is_closed():
            loop.call_soon_threadsafe(start)

    async def _close(self, session_id: str) -> None:
        for mcp_id in [key for key, value in self._by_mcp_id.items() if value == session_id]:
            del self._by_mcp_id[mcp_id]
        try:
            await self.client.close(session_id)
        except Exception as error:  # a close that fails must not stop the server
            print(f"closing session {session_id} failed: {error}", file=sys.stderr)


def mcp_server(sessions: SessionMap, *, description: str = "") -> Server:
    """The ``mcp`` package's low-level server answering with ``sessions``' environment."""
    from mcp import types
    from mcp.server.lowlevel import Server

    client = sessions.client
    listed = [
        types.Tool(
            name=entry["name"],
            description=entry.get("description") or None,
            input_schema=entry["parameters"],
        )
        for entry in client.tools()
    ]

    async def list_tools(context: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(context: Any, params: Any) -> types.CallToolResult:
        session_id = await sessions.session_of(_connection_of(context))
        try:
            value = await client.call_tool_value(
                session_id, params.name, dict(params.arguments or {})
            )
        except ToolCallRejected as rejected:
            return _result(str(rejected), error=True)
        except Exception as failure:  # the rollout's failure, reported to this client only
            kind = getattr(failure, "kind", "internal_error")
            return _result(f"the tool failed ({kind}): {failure}", error=True)
        return _result(tool_output_text(value), error=False)

    server: Server = Server(
        client.name,
        description=description or None,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    return server


def _connection_of(context: Any) -> object:
    """What identifies an MCP session: the connection its requests arrive on.

    The ``mcp`` package builds a ``ServerSession`` per request (a proxy); the connection
    behind it (a stdio client, an ``Mcp-Session-Id``) lives as long as the MCP session. Its
    ``_connection`` has no public accessor in mcp 2.3: read it, falling back to the proxy."""
    session = context.session
    return getattr(session, "_connection", None) or session


def _result(text: str, *, error: bool) -> CallToolResult:
    from mcp import types

    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=error)


async def serve_mcp_stdio(server: Server) -> None:
    """Serve one MCP client on this process's stdin and stdout until it disconnects."""
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


async def serve_mcp_http(
    server: Server,
    sessions: SessionMap,
    *,
    host: str,
    port: int,
    token: str | None,
    label: str,
    stop: asyncio.Event | None = None,
) -> None:
    """Serve MCP over streamable HTTP at ``/mcp``, behind the bearer-token guard, announcing
    the address as the other servers do (a line for humans on stderr, one for supervisors).

    A client ending its MCP session (``DELETE`` with its ``Mcp-Session-Id``) closes the
    environment session at once; one that just goes away is closed when the ``mcp`` package
    drops its connection (idle for 30 minutes), or by the environment's session TTL."""
    from palaestra.http.announce import ready_line, serve_announced
    from palaestra.http.guard import Guard

    mcp_app = server.streamable_http_app(host=host, json_response=True)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await mcp_app(scope, receive, send)
        if scope["type"] == "http" and scope["method"] == "DELETE":
            for name, value in scope["headers"]:
                if name == b"mcp-session-id":
                    await sessions.release(value.decode("latin-1"))

    def on_ready(url: str) -> None:
        print(f"serving {label} on {url}/mcp", file=sys.stderr, flush=True)
        print(ready_line(url), flush=True)

    await serve_announced(
        Guard(app, token=token), host=host, port=port, on_ready=on_ready, stop=stop
    )


async def serve_mcp(
    env: EnvSpec,
    *,
    tasks: Path | None,
    task_index: int,
    transport: str,
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Build the environment ``env`` names and serve its tools over MCP until stopped.

    Each MCP session is seeded with task ``task_index`` of ``tasks`` (default: the
    environment's example tasks; an environment with none gets ``{}``). A mistake (unknown
    environment, argument or task) is a one-line ``ConfigError`` before anything is served.
    """
    from palaestra.collection.assembly import find
    from palaestra.serve.evaluator import load_dataset

    found = find(env)
    if found is None or env.url is not None or env.cmd is not None:
        raise ConfigError("name the environment to serve (a name, ./file.py or module:Class)")
    dataset = load_dataset(tasks or found.example_tasks)
    if dataset and not 0 <= task_index < len(dataset):
        raise ConfigError(f"--task {task_index}: the tasks have indexes 0 to {len(dataset) - 1}")
    if not dataset and task_index:
        raise ConfigError(f"--task {task_index}: environment '{found.name}' has no tasks")
    task = dataset[task_index] if dataset else {}
    client = LocalEnvironmentClient(found.build())
    try:
        sessions = SessionMap(client, task)
        server = mcp_server(sessions, description=client.environment.description)
        if transport == "stdio":
            print(f"serving environment {found.name} over MCP on stdio", file=sys.stderr)
            await serve_mcp_stdio(server)
        else:
            label = f"environment {found.name} over MCP"
            await serve_mcp_http(
                server, sessions, host=host, port=port, token=token, label=label, stop=stop
            )
    finally:
        await client.aclose()
