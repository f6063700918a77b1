"""Tools from an MCP server: ``MCPEnvironment`` and ``MCPServer``.

An environment whose tools come from a Model Context Protocol server::

    class Notes(MCPEnvironment):
        \"\"\"Keep notes with a notebook served over MCP.\"\"\"

        mcp_server = MCPServer.stdio([sys.executable, "-m", "notes_server"])

        async def verify(self, session: Session, response: JsonDict) -> float:
            notes = await self.call_mcp(session, "list_notes")
            return 1.0 if session.task["note"] in notes.text else 0.0

The server is a command palaestra starts and talks to over stdio (``MCPServer.stdio``) or a
URL it reaches over streamable HTTP (``MCPServer.http``). ``per_session=True`` (the default
for stdio) starts one server, or opens one MCP session, per rollout, in ``seed``, and stops
it in ``close``: rollouts cannot see each other's state. ``per_session=False`` shares one
with every rollout, kept from the first listing of the tools until the runner stops (one
that dies is started again by the next ``seed``; the rollouts in flight read tool errors).

The tools are listed once, when the runner first asks for them (a per-session server is
started for that and stopped again), and join the class's own ``@tool`` methods. The model
sees each tool's input schema as the server gives it; its arguments are checked against that
schema before the call, as a ``@tool``'s are, and a wrong call goes back to the model.

What a server does wrong never crashes a rollout nor scores it 0: a tool's error result
(``isError``), a protocol error, a server that died and a call that overran ``call_timeout``
each come back to the model as the tool's error output (``ToolError``). A server that does
not start is an explicit failure: ``MCPServerUnreachable`` when the tools are listed (the
run cannot start), ``MCPServerFailure`` (``env_error``) for one rollout's own server.

Override ``seed_state`` (not ``seed``) for state of your own: ``session.state`` is an
``MCPState`` whose ``data`` is what it returned. ``call_mcp`` calls a tool from your own code
(``verify`` reading what the rollout did, a ``@tool`` wrapping one).
"""

from __future__ import annotations

import asyncio
import copy
import functools
import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from palaestra.environment.base import Environment, check_tool_names
from palaestra.environment.context import EnvironmentContext
from palaestra.environment.kinds.mcp_connection import (
    Connection,
    MCPConnectionLost,
    ToolResult,
    Transport,
    on_mcp_loop,
    on_mcp_loop_blocking,
)
from palaestra.environment.sessions import Session
from palaestra.environment.tools import ToolSpec, json_schema_arguments, parse_docstring
from palaestra.errors import (
    ConfigError,
    EnvironmentFailure,
    EnvironmentUnreachable,
    ToolError,
)
from palaestra.types import JsonDict

__all__ = [
    "MCPEnvironment",
    "MCPServer",
    "MCPServerFailure",
    "MCPServerUnreachable",
    "MCPState",
    "ToolResult",
]


class MCPServerFailure(EnvironmentFailure):
    """A rollout's own MCP server did not start (``env_error``)."""


class MCPServerUnreachable(EnvironmentUnreachable):
    """The MCP server the environment's tools come from cannot be started or reached."""


@dataclass(frozen=True, slots=True)
class MCPServer:
    """Where an environment's tools come from, and whose the server is."""

    transport: Transport
    per_session: bool
    start_timeout: float = 30.0
    """Seconds to start (or reach) the server and initialise the MCP session."""
    call_timeout: float = 30.0
    """Seconds a tool call may take; a slower one comes back to the model as an error.
    Keep it under the environment's ``tool_timeout``, which fails the rollout instead."""
    tools: tuple[str, ...] | None = None
    """Only these of the server's tools (None: all)."""

    @classmethod
    def stdio(
        cls,
        command: Sequence[str],
        *,
        per_session: bool = True,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        start_timeout: float = 30.0,
        call_timeout: float = 30.0,
        tools: Sequence[str] | None = None,
    ) -> MCPServer:
        """A server palaestra starts as ``command`` and talks to over stdin/stdout.

        ``env`` is added to the server's environment (the ``mcp`` package passes it only a
        few variables of ours, such as ``PATH`` and ``HOME``)."""
        if not command or not all(isinstance(part, str) and part for part in command):
            raise ConfigError(f"MCPServer.stdio needs a command (a list of strings): {command!r}")
        transport = Transport(command=tuple(command), env=env, cwd=cwd)
        return cls(transport, per_session, start_timeout, call_timeout, _names(tools))

    @classmethod
    def http(
        cls,
        url: str,
        *,
        per_session: bool = True,
        headers: dict[str, str] | None = None,
        start_timeout: float = 30.0,
        call_timeout: float = 30.0,
        tools: Sequence[str] | None = None,
    ) -> MCPServer:
        """A server already listening at ``url`` (streamable HTTP, e.g. ``.../mcp``).

        ``per_session`` opens an MCP session per rollout (whether rollouts then share state
        is the server's business); ``headers`` go with every request (a bearer token)."""
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"MCPServer.http needs an http:// or https:// URL: {url!r}")
        transport = Transport(url=url, headers=dict(headers or {}))
        return cls(transport, per_session, start_timeout, call_timeout, _names(tools))


def _names(tools: Sequence[str] | None) -> tuple[str, ...] | None:
    return None if tools is None else tuple(tools)


@dataclass(slots=True)
class MCPState:
    """A rollout's state in an ``MCPEnvironment``: its server connection and your data."""

    data: Any
    """What ``seed_state`` returned."""
    connection: Connection | None = None
    """The rollout's own connection (``per_session``); None when the server is shared."""


class MCPEnvironment(Environment):
    """An environment whose tools (some or all) come from an MCP server (``mcp_server``)."""

    mcp_server: ClassVar[MCPServer | None] = None

    _shared: Connection | None = None
    _mcp_specs: dict[str, ToolSpec] | None = None

    @functools.cached_property
    def _restarting(self) -> asyncio.Lock:
        """Held while a shared server that died is started again (one restart, not one per
        rollout seeded meanwhile)."""
        return asyncio.Lock()

    def tools(self) -> list[JsonDict]:
        self._discover()
        return super().tools()

    def setup(self, context: EnvironmentContext) -> None:
        super().setup(context)
        self._discover()

    def seed_state(self, task: JsonDict) -> Any:
        """Your own state of a new rollout of ``task`` (``session.state.data``); ``{}``."""
        return {}

    async def seed(self, task: JsonDict) -> MCPState:
        data = self.seed_state(task)
        if inspect.isawaitable(data):
            data = await data
        server = self._server()
        if not server.per_session:
            self._discover()
            shared = self._shared
            if shared is None or not shared.alive:  # it died: start it again for what follows
                async with self._restarting:
                    if self._shared is shared:
                        if shared is not None:
                            await on_mcp_loop(shared.close())  # its process, its files
                        self._shared = await self._start(server)
            return MCPState(data)
        return MCPState(data, await self._start(server))

    async def _start(self, server: MCPServer) -> Connection:
        try:
            return await on_mcp_loop(_opened(server))
        except MCPConnectionLost as lost:
            raise MCPServerFailure(
                f"the MCP server {server.transport.describe()} did not start: {lost}"
            ) from None

    async def close(self, session: Session) -> None:  # type: ignore[override]  # may be async
        state = session.state
        if isinstance(state, MCPState) and state.connection is not None:
            connection, state.connection = state.connection, None
            await on_mcp_loop(connection.close())

    async def aclose(self) -> None:
        shared, self._shared = self._shared, None
        if shared is not None:
            await on_mcp_loop(shared.close())
        await super().aclose()

    async def call_mcp(
        self, session: Session, name: str, arguments: JsonDict | None = None
    ) -> ToolResult:
        """Call the server's tool ``name`` for this rollout; ``ToolError`` if it cannot answer
        (an error result is returned, with ``is_error`` set)."""
        server = self._server()
        state = session.state
        connection = state.connection if isinstance(state, MCPState) else None
        connection = connection or self._shared
        if connection is None:
            raise ToolError(f"MCP tool '{name}': the rollout has no connection to the server")
        try:
            return await on_mcp_loop(
                connection.call(name, dict(arguments or {}), server.call_timeout)
            )
        except TimeoutError:
            raise ToolError(
                f"MCP tool '{name}' did not answer within {server.call_timeout:g}s"
            ) from None
        except MCPConnectionLost as lost:
            raise ToolError(f"MCP tool '{name}' failed: {lost}") from None

    def _server(self) -> MCPServer:
        server = type(self).mcp_server
        if server is None:
            raise ConfigError(f"{type(self).__name__} sets no mcp_server (MCPServer.stdio/http)")
        return server

    def _discover(self) -> None:
        """List the server's tools once and add them to this instance's ``tool_specs``."""
        if self._mcp_specs is not None:
            return
        server = self._server()
        timeout = server.start_timeout * 2 + 5
        try:
            connection, listed = on_mcp_loop_blocking(_listing(server), timeout)
        except (MCPConnectionLost, TimeoutError) as error:
            raise MCPServerUnreachable(
                f"{type(self).__name__}: the MCP server {server.transport.describe()} "
                f"cannot be used: {error or 'no answer'}"
            ) from None
        if server.per_session:
            on_mcp_loop_blocking(connection.close(), 15)
        else:
            self._shared = connection
        specs = dict(type(self).tool_specs)
        for listed_tool in listed:
            if server.tools is not None and listed_tool.name not in server.tools:
                continue
            if listed_tool.name in specs:
                raise ConfigError(
                    f"{type(self).__name__}: the MCP tool '{listed_tool.name}' has the name "
                    "of one of its @tool methods"
                )
            specs[listed_tool.name] = mcp_tool_spec(listed_tool)
        missing = set(server.tools or ()) - set(specs)
        if missing:
            raise ConfigError(
                f"{type(self).__name__}: the MCP server lists no tool {', '.join(sorted(missing))}"
            )
        check_tool_names(type(self).__name__, specs)
        self._mcp_specs = specs
        vars(self)["tool_specs"] = specs  # this instance's tools: the class's and the server's


async def _opened(server: MCPServer) -> Connection:
    connection = Connection(server.transport)
    await connection.open(server.start_timeout)
    return connection


async def _listing(server: MCPServer) -> tuple[Connection, list[Any]]:
    connection = await _opened(server)
    try:
        return connection, await connection.list_tools()
    except BaseException:
        await connection.close()
        raise


class MCPToolSpec(ToolSpec):
    """A tool of an MCP server: described to the model with the server's own input schema."""

    __slots__ = ("input_schema",)
    input_schema: JsonDict

    def __init__(self, name: str, description: str, input_schema: JsonDict) -> None:
        arguments = json_schema_arguments(name, input_schema)
        super().__init__(name, description, _call(name), arguments, True, False)
        object.__setattr__(self, "input_schema", input_schema)

    def schema(self) -> JsonDict:
        parameters = copy.deepcopy(self.input_schema)
        parameters.pop("title", None)
        for prop in parameters.setdefault("properties", {}).values():
            if isinstance(prop, dict):
                prop.pop("title", None)  # pydantic's, repeating the name: noise to a model
        return {
            "type": "function",
            "name": self.name,
            "description": self.description,
            "parameters": parameters,
            "strict": False,
        }


def mcp_tool_spec(listed: Any) -> MCPToolSpec:
    """The ``ToolSpec`` of one tool a server listed (its name, description, input schema)."""
    summary, _ = parse_docstring(listed.description or "")
    schema = dict(listed.input_schema or {"type": "object"})
    # As a @tool's: an argument the schema does not name is refused, unless the server says
    # it takes others (most servers' schemas say nothing, and ignore or reject them).
    schema.setdefault("additionalProperties", False)
    return MCPToolSpec(listed.name, summary or listed.name, schema)


def _call(name: str) -> Any:
    async def call(environment: MCPEnvironment, session: Session, arguments: JsonDict) -> str:
        result = await environment.call_mcp(session, name, arguments)
        if result.is_error:
            raise ToolError(result.text or f"MCP tool '{name}' answered an error")
        return result.text

    call.__name__ = name
    return call
