"""The live MCP sessions of ``palaestra serve mcp`` over HTTP: capped, expiring, evictable.

The ``mcp`` package's streamable HTTP app keeps each session (an ``Mcp-Session-Id``) until its
client deletes it or it has been idle for its timeout, and answers 503 to every new client
once its cap is full: one client opening sessions in a loop locked every other out for the
whole timeout. ``SessionLimiter`` sits in front of it and keeps its own books:

- a session is *idle* while no request of it is in flight (a tool running or an open stream
  holds it); one idle for longer than ``ttl`` seconds is ended by a sweep that runs every
  fraction of the TTL, so what it holds (an environment session, a machine's box) goes with it;
- at ``max_sessions`` live sessions, a request opening another ends the least recently used
  idle one to make room (its client's next request is a 404, on which the MCP specification
  has a client open a new session), one that holds nothing yet (``holds``: no tool called)
  before one that holds work; only when every live session is busy is the new one answered
  503 with ``Retry-After``.

A session is ended as its client would end it: a ``DELETE`` with its id, passed to the
``mcp`` app (the one public way to end a session), then ``on_end`` with the id.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_SESSION_TTL",
    "RETRY_AFTER_SECONDS",
    "SessionLimiter",
]

DEFAULT_MAX_SESSIONS = 64
"""Live MCP sessions one server holds. An MCP session costs the server about 37 KB and its
environment session what the environment keeps (measured: 10,000 sessions grew a server by
370 MB); a few dozen clients at once is what one served environment is for."""
DEFAULT_SESSION_TTL = 600.0
"""Seconds an MCP session may sit idle (no request in flight) before it is ended: long
enough for a model to think between calls, short enough that abandoned sessions free their
place and their machine soon."""
RETRY_AFTER_SECONDS = 5
"""What a client refused because every session is busy is told to wait."""

_SESSION_ID = b"mcp-session-id"


@dataclass(slots=True)
class _Live:
    """One live MCP session: when it was last used and how many of its requests run."""

    last_used: float
    in_flight: int = 0


class SessionLimiter:
    """ASGI middleware over the ``mcp`` app: ``max_sessions`` live at most, idle ones end
    after ``ttl`` seconds (see the module docstring). ``on_end`` runs with the id of every
    session that ends, whoever ended it (the client's ``DELETE``, the TTL, an eviction);
    ``holds`` says whether a session holds work (evicted last); ``path`` is where the
    ``mcp`` app answers."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_sessions: int | None,
        ttl: float,
        on_end: Callable[[str], Awaitable[None]],
        holds: Callable[[str], bool] = lambda _: False,
        path: str = "/mcp",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_sessions is not None and max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1 (or None), got {max_sessions}")
        if not ttl > 0:
            raise ValueError(f"ttl must be a positive number of seconds, got {ttl}")
        self.app = app
        self.path = path
        self.max_sessions = max_sessions
        self.ttl = ttl
        self._on_end = on_end
        self._holds = holds
        self._clock = clock
        self._live: OrderedDict[str, _Live] = OrderedDict()
        """Least recently used first."""
        self._opening = 0
        self._template: Scope | None = None
        self.refused = 0
        """Opening requests answered 503 (every live session busy)."""
        self.ended = 0
        """Sessions this server ended: expired or evicted."""

    def __len__(self) -> int:
        return len(self._live)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self._template is None:
            self._template = scope
        mcp_id = _header(scope, _SESSION_ID)
        if mcp_id is None:
            await self._open(scope, receive, send)
            return
        live = self._live.get(mcp_id)
        if live is None:  # unknown, ended or never opened: the mcp app answers (404)
            await self.app(scope, receive, send)
            return
        live.in_flight += 1
        self._live.move_to_end(mcp_id)
        try:
            await self.app(scope, receive, send)
        finally:
            live.in_flight -= 1
            live.last_used = self._clock()
            if mcp_id in self._live:
                self._live.move_to_end(mcp_id)
        if scope["method"] == "DELETE" and self._live.pop(mcp_id, None) is not None:
            await self._on_end(mcp_id)

    async def _open(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A request without a session id: the one that opens a session, if there is room."""
        if scope["method"] != "POST":  # no session to open: the mcp app answers
            await self.app(scope, receive, send)
            return
        await self.sweep()
        full = self.max_sessions is not None and len(self._live) + self._opening >= (
            self.max_sessions
        )
        if full and not (
            await self.evict(lambda mcp_id: not self._holds(mcp_id)) or await self.evict()
        ):
            self.refused += 1
            await _busy(send, len(self._live))
            return
        self._opening += 1
        opened: list[str] = []

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                for name, value in message.get("headers", ()):
                    if name.lower() == _SESSION_ID:
                        opened.append(value.decode("latin-1"))
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            self._opening -= 1
        for mcp_id in opened:
            self._live[mcp_id] = _Live(self._clock())

    async def sweep(self) -> int:
        """End every session idle for longer than the TTL; return how many."""
        deadline = self._clock() - self.ttl
        expired = [
            mcp_id
            for mcp_id, live in self._live.items()
            if live.in_flight == 0 and live.last_used < deadline
        ]
        for mcp_id in expired:
            await self.end(mcp_id)
        return len(expired)

    async def evict(self, wanted: Callable[[str], bool] = lambda _: True) -> bool:
        """End the least recently used idle session ``wanted`` accepts; False if none is."""
        for mcp_id, live in self._live.items():
            if live.in_flight == 0 and wanted(mcp_id):
                await self.end(mcp_id)
                return True
        return False

    async def end(self, mcp_id: str) -> None:
        """End a live session as its client would (``DELETE``), then run ``on_end``."""
        if self._live.pop(mcp_id, None) is None:
            return
        self.ended += 1
        if self._template is not None:
            await self._delete(self._template, mcp_id)
        await self._on_end(mcp_id)

    async def run_sweeps(self, stop: asyncio.Event) -> None:
        """Sweep every quarter TTL (at most every 30 s) until ``stop`` is set."""
        every = min(self.ttl / 4, 30.0)
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), every)
            try:
                await self.sweep()
            except Exception as error:  # a sweep that fails must not stop the server
                print(f"ending idle MCP sessions failed: {error}", file=sys.stderr)

    async def _delete(self, template: Scope, mcp_id: str) -> None:
        """``DELETE /mcp`` for ``mcp_id``, on the connection facts of a request uvicorn gave
        (its ``server`` address names the host: no header a client sent is reused)."""
        host, port = template.get("server") or ("127.0.0.1", 0)
        authority = f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"
        scope = {
            **template,
            "method": "DELETE",
            "path": self.path,
            "raw_path": self.path.encode(),
            "query_string": b"",
            "headers": [(_SESSION_ID, mcp_id.encode("latin-1")), (b"host", authority.encode())],
        }
        sent = False
        status: list[int] = []

        async def receive() -> Message:
            nonlocal sent
            if sent:  # the body was read: what follows is the end of the exchange
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": b"", "more_body": False}

        async def keep_status(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])

        await self.app(scope, receive, keep_status)
        if status and status[0] not in (200, 404):  # 404: it had ended on its own
            print(f"ending MCP session {mcp_id} was answered {status[0]}", file=sys.stderr)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


async def _busy(send: Send, live: int) -> None:
    """503 with ``Retry-After``, its body a JSON-RPC error (what MCP clients read)."""
    message = (
        f"this server's {live} MCP sessions are all busy (its --max-sessions); "
        f"retry in {RETRY_AFTER_SECONDS} s"
    )
    body = orjson.dumps(
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": message}}
    )
    await send(
        {
            "type": "http.response.start",
            "status": 503,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"retry-after", str(RETRY_AFTER_SECONDS).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
