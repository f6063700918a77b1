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

A machine environment's ``submit`` (``MachineTools``) ends the episode; over MCP nothing else
would ever score it, so the server runs the environment's verifier then and answers the reward
(or why the work could not be checked). Its sessions each hold a machine (for ``harbor:``, a
box): ``max_boxes`` bounds how many hold one at once. Over HTTP, ``SessionLimiter``
(``mcp_sessions``) caps and expires the MCP sessions themselves.
"""

from __future__ import annotations

import asyncio
import os
import sys
import weakref
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from palaestra.environment.kinds.machine import MachineTools
from palaestra.environment.running.client import LocalEnvironmentClient, tool_output_text
from palaestra.errors import ConfigError, PalaestraError, ToolCallRejected
from palaestra.serve.mcp_sessions import DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_TTL
from palaestra.types import JsonDict

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server
    from mcp.types import CallToolResult

    from palaestra.http.json import JSONResponse
    from palaestra.serve.mcp_sessions import SessionLimiter
    from palaestra.spec import EnvSpec

__all__ = [
    "SessionMap",
    "SessionsBusy",
    "default_max_boxes",
    "holds_machines",
    "mcp_server",
    "serve_mcp",
    "serve_mcp_http",
    "serve_mcp_stdio",
]

FINISHED = ""
"""The session id of an MCP session that submitted (no palaestra session has it)."""
OVER = "You already submitted: the episode is over. Answer without calling tools."
NO_RESPONSE: JsonDict = {
    "id": "resp_mcp",
    "object": "response",
    "status": "completed",
    "output": [],
}
"""What ``verify`` is given at ``submit``: an MCP client sends its model's final answer to no
one, so there is none (a machine's verifier reads the machine, not the answer)."""


def holds_machines(client: LocalEnvironmentClient) -> bool:
    """Whether each session of the environment holds a machine (a sandbox or a box)."""
    return isinstance(client.environment, MachineTools)


def default_max_boxes() -> int:
    """Machines held at once by default: one per CPU (each runs a model's commands)."""
    return os.cpu_count() or 1


class SessionsBusy(PalaestraError):
    """Every machine this server may hold is held by a session with a request in flight."""


class SessionMap:
    """The palaestra session of each live MCP session, seeded on first use.

    ``max_held`` caps the palaestra sessions held at once (for a machine environment: its
    machines); at the cap, ``make_room`` (the HTTP server's: end the least recently used idle
    MCP session holding one) is asked for room before a seed is refused with ``SessionsBusy``.
    """

    def __init__(
        self, client: LocalEnvironmentClient, task: JsonDict, *, max_held: int | None = None
    ) -> None:
        self.client = client
        self.task = task
        self.max_held = max_held
        self.make_room: Callable[[], Awaitable[bool]] | None = None
        self._ids: weakref.WeakKeyDictionary[object, str] = weakref.WeakKeyDictionary()
        self._seeding: weakref.WeakKeyDictionary[object, asyncio.Lock] = weakref.WeakKeyDictionary()
        self._closing: set[asyncio.Task[None]] = set()
        self._by_mcp_id: dict[str, str] = {}
        self._held: set[str] = set()
        self._being_seeded = 0

    def __len__(self) -> int:
        """Palaestra sessions held (seeded and not yet closed)."""
        return len(self._held)

    async def finish(self, mcp_session: object) -> None:
        """Close ``mcp_session``'s palaestra session now (its work was submitted and checked:
        its machine is of no more use); its later calls are told the episode is over."""
        session_id = self._ids.get(mcp_session)
        if session_id is not None and session_id != FINISHED:
            self._ids[mcp_session] = FINISHED
            await self._close(session_id)

    def holds(self, mcp_id: str) -> bool:
        """Whether the MCP session ``mcp_id`` holds a palaestra session."""
        return mcp_id in self._by_mcp_id

    async def session_of(self, mcp_session: object) -> str:
        """The palaestra session of ``mcp_session`` (seeded now if it has none)."""
        known = self._ids.get(mcp_session)
        if known is not None:
            return known
        lock = self._seeding.setdefault(mcp_session, asyncio.Lock())
        async with lock:
            known = self._ids.get(mcp_session)
            if known is None:
                await self._room()
                self._being_seeded += 1
                try:
                    known = await self.client.seed(dict(self.task))
                finally:
                    self._being_seeded -= 1
                self._held.add(known)
                self._ids[mcp_session] = known
                mcp_id = getattr(mcp_session, "session_id", None)
                if isinstance(mcp_id, str):
                    self._by_mcp_id[mcp_id] = known
                weakref.finalize(mcp_session, self._close_later, asyncio.get_running_loop(), known)
            return known

    async def _room(self) -> None:
        """At the cap, make room for one more or refuse (``SessionsBusy``)."""
        cap = self.max_held
        if cap is None or len(self._held) + self._being_seeded < cap:
            return
        made = self.make_room is not None and await self.make_room()
        if made and len(self._held) + self._being_seeded < cap:
            return
        raise SessionsBusy(
            f"this server's {cap} machines (its --max-boxes) are all in use by sessions "
            f"working now; try again in a few seconds"
        )

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
        if session_id not in self._held:  # closed already (its client's DELETE, then GC)
            return
        self._held.discard(session_id)
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

    submits = holds_machines(client) and "submit" in client.environment.tool_specs

    async def call_tool(context: Any, params: Any) -> types.CallToolResult:
        connection = _connection_of(context)
        try:
            session_id = await sessions.session_of(connection)
        except SessionsBusy as busy:
            return _result(str(busy), error=True)
        except Exception as failure:  # the seed failed: this client's session has none
            text = f"the session could not start ({_kind(failure)}): {failure}"
            return _result(text, error=True)
        if session_id == FINISHED:
            return _result(OVER, error=True)
        try:
            value = await client.call_tool_value(
                session_id, params.name, dict(params.arguments or {})
            )
        except ToolCallRejected as rejected:
            return _result(str(rejected), error=True)
        except Exception as failure:  # the rollout's failure, reported to this client only
            return _result(f"the tool failed ({_kind(failure)}): {failure}", error=True)
        if submits and params.name == "submit":
            checked = await _checked(client, session_id, sessions.task)
            await sessions.finish(connection)
            return checked
        return _result(tool_output_text(value), error=False)

    server: Server = Server(
        client.name,
        description=description or None,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    return server


async def _checked(
    client: LocalEnvironmentClient, session_id: str, task: JsonDict
) -> CallToolResult:
    """``submit``'s answer over MCP: the environment's verifier run now, and what it said."""
    try:
        verdict = await client.verify(session_id, task, NO_RESPONSE)
    except Exception as failure:
        return _result(
            f"Submitted; the episode is over. Your work could not be checked "
            f"({_kind(failure)}): {failure}",
            error=True,
        )
    if verdict.failure is not None:
        return _result(
            f"Submitted; the episode is over. Your work could not be checked "
            f"({verdict.failure.kind}): {verdict.failure.reason}",
            error=True,
        )
    return _result(
        f"Submitted and checked now: reward {verdict.reward:g}. The episode is over "
        f"(a new MCP session starts the task again).",
        error=False,
    )


def _kind(failure: Exception) -> str:
    return str(getattr(failure, "kind", "internal_error"))


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
    max_sessions: int | None = DEFAULT_MAX_SESSIONS,
    session_ttl: float = DEFAULT_SESSION_TTL,
) -> None:
    """Serve MCP over streamable HTTP at ``/mcp``, behind the bearer-token guard, announcing
    the address as the other servers do (a line for humans on stderr, one for supervisors).

    At most ``max_sessions`` MCP sessions live at once, each ended after ``session_ttl``
    seconds idle (``SessionLimiter``); a client ending its MCP session (``DELETE``) closes its
    environment session at once, and so does a session ended by the limiter. ``GET /`` says
    how many sessions live and what the caps are, as the env server's does."""
    from palaestra.http.announce import ready_line, serve_announced
    from palaestra.http.guard import Guard
    from palaestra.serve.mcp_sessions import SessionLimiter

    # The mcp package's own idle timeout is a backstop behind the limiter's sweeps, and its
    # own cap is lifted: the limiter decides who gets a session.
    mcp_app = server.streamable_http_app(
        host=host,
        json_response=True,
        session_idle_timeout=2 * session_ttl + 60,
        max_sessions=None,
    )
    limits = SessionLimiter(
        mcp_app,
        max_sessions=max_sessions,
        ttl=session_ttl,
        on_end=sessions.release,
        holds=sessions.holds,
    )
    sessions.make_room = lambda: limits.evict(sessions.holds)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/" and scope["method"] == "GET":
            await _health(limits, sessions)(scope, receive, send)
        else:
            await limits(scope, receive, send)

    def on_ready(url: str) -> None:
        print(f"serving {label} on {url}/mcp", file=sys.stderr, flush=True)
        print(ready_line(url), flush=True)

    stop = stop or asyncio.Event()
    sweeping = asyncio.create_task(limits.run_sweeps(stop))
    try:
        await serve_announced(
            Guard(app, token=token), host=host, port=port, on_ready=on_ready, stop=stop
        )
    finally:
        stop.set()
        await sweeping


def _health(limits: SessionLimiter, sessions: SessionMap) -> JSONResponse:
    """``GET /``: the live sessions, what they hold and the caps."""
    from palaestra.http.json import JSONResponse

    return JSONResponse(
        {
            "status": "ok",
            "sessions": len(limits),
            "max_sessions": limits.max_sessions,
            "session_ttl": limits.ttl,
            "environment_sessions": len(sessions.client.sessions),
            "held_sessions": len(sessions),
            "max_boxes": sessions.max_held,
            "ended_sessions": limits.ended,
            "refused_sessions": limits.refused,
        }
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
    max_sessions: int | None = None,
    session_ttl: float | None = None,
    max_boxes: int | None = None,
) -> None:
    """Build the environment ``env`` names and serve its tools over MCP until stopped.

    Each MCP session is seeded with task ``task_index`` of ``tasks`` (default: the
    environment's example tasks; an environment with none gets ``{}``). A mistake (unknown
    environment, argument or task) is a one-line ``ConfigError`` before anything is served.
    ``max_boxes`` caps the sessions holding a machine at once, for an environment whose
    sessions hold one (None: one per CPU; 0: no cap); ``max_sessions`` (0: no cap) and
    ``session_ttl`` bound the MCP sessions over HTTP (``serve_mcp_http``; None: the defaults).
    """
    from palaestra.collection.assembly import find
    from palaestra.collection.tasks import load_dataset

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
        held = None
        if holds_machines(client) and max_boxes != 0:
            held = max_boxes or default_max_boxes()
        sessions = SessionMap(client, task, max_held=held)
        server = mcp_server(sessions, description=client.environment.description)
        if transport == "stdio":
            print(f"serving environment {found.name} over MCP on stdio", file=sys.stderr)
            await serve_mcp_stdio(server)
        else:
            label = f"environment {found.name} over MCP"
            await serve_mcp_http(
                server,
                sessions,
                host=host,
                port=port,
                token=token,
                label=label,
                stop=stop,
                max_sessions=_cap(max_sessions, DEFAULT_MAX_SESSIONS),
                session_ttl=session_ttl or DEFAULT_SESSION_TTL,
            )
    finally:
        await client.aclose()


def _cap(value: int | None, default: int) -> int | None:
    """A cap: unset is the default, 0 lifts it."""
    return default if value is None else value or None
