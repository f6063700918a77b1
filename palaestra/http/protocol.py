"""palaestra's HTTP/1.1 protocol for uvicorn: ASGI on httptools, each answer in one write.

uvicorn runs it (``http=HttpProtocol``): uvicorn still owns the sockets, the lifespan, signals
and graceful shutdown; this class is what each connection speaks. Why not uvicorn's own
httptools protocol: measured on the served weather stack it cost several times the CPU per
request of a bare httptools server (benchmarks/results/micro.md), and it writes an answer's
head and body in two ``send`` calls, so every answer is two loopback packets and two wake-ups
of the client. Here an answer whose body comes in one piece (every answer palaestra's servers
give) is one write.

What it does: keep-alive (closed after ``timeout_keep_alive`` idle seconds, as uvicorn),
``Connection: close`` and HTTP/1.0, pipelined requests (answered in order, reading paused
meanwhile), chunked request bodies (httptools decodes them), ``Expect: 100-continue``, chunked
answers when an app streams without a length, ``HEAD``. A malformed request is a 400 and the
connection closes; an app that raises before answering is a 500 (logged); one that raises
mid-answer has its connection closed. WebSockets are not spoken: apps with WebSocket routes
run on uvicorn's own protocols (``make_server(ws=...)``).
"""

from __future__ import annotations

import asyncio
import http
import logging
from collections import deque
from typing import Any
from urllib.parse import unquote

import httptools

logger = logging.getLogger("palaestra.serve")

_READ_PAUSE_BYTES = 1024 * 1024
"""A request body buffered beyond this pauses reading until the app takes it."""
_PHRASES = {status.value: status.phrase.encode() for status in http.HTTPStatus}
_STATUS_LINES = {
    status: b"HTTP/1.1 %d %s\r\n" % (status, phrase) for status, phrase in _PHRASES.items()
}
_NO_BODY_STATUSES = frozenset({204, 304})
_ASGI = {"version": "3.0", "spec_version": "2.3"}
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
_DISCONNECT = {"type": "http.disconnect"}


class HttpProtocol(asyncio.Protocol):
    """One client connection; built by uvicorn with its config and shared server state."""

    def __init__(
        self,
        config: Any,
        server_state: Any,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        if not config.loaded:
            config.load()
        self.app = config.loaded_app
        # An app's hot routes it answers from the whole body, without ASGI (see _start).
        self.direct_route: Any = getattr(self.app, "direct_route", None)
        self.loop = _loop or asyncio.get_running_loop()
        self.server_state = server_state
        self.app_state = app_state
        self.root_path: str = config.root_path
        self.keepalive_seconds: float = config.timeout_keep_alive
        self.parser = httptools.HttpRequestParser(self)
        self.transport: asyncio.Transport | None = None
        self.server: tuple[str, int] | None = None
        self.client: tuple[str, int] | None = None
        self.current: Exchange | None = None
        self.pending: deque[Exchange] = deque()
        self.reading = True
        self.closing = False
        self.idle_timer: asyncio.TimerHandle | None = None
        self.idle_since: float | None = None
        self.default_source: object = None
        self.default_head = b""
        self._url = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._asks_continue = False
        self._parsing: Exchange | None = None

    # --- asyncio.Protocol ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is no subclass
        self.server_state.connections.add(self)
        self.server = _address(transport.get_extra_info("sockname"))
        self.client = _address(transport.get_extra_info("peername"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.server_state.connections.discard(self)
        self.transport = None
        self.closing = True
        self._cancel_idle()
        if self.current is not None:
            self.current.disconnect()
        self.pending.clear()
        self.parser = _DETACHED  # the parser refers back to this protocol: break the cycle

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            # An upgrade (h2c, websocket) this server does not speak: the request is answered
            # as plain HTTP/1.1 and the connection closes after it (the stream is unparsable).
            if self._parsing is not None:
                self._parsing.keep_alive = False
        except httptools.HttpParserError as exc:
            self._refuse(400, f"Invalid HTTP request received: {exc}".encode())

    def eof_received(self) -> bool | None:
        return None

    def pause_writing(self) -> None:  # uvloop buffers; nothing streams large answers here
        pass

    def resume_writing(self) -> None:
        pass

    def shutdown(self) -> None:
        """uvicorn's graceful stop: close now when idle, else after the answer in flight."""
        if self.current is None and self.transport is not None:
            self.transport.close()
        else:
            self.closing = True

    # --- httptools callbacks -------------------------------------------------------------

    def on_message_begin(self) -> None:
        self._url = b""
        self._headers = []
        self._asks_continue = False
        self.idle_since = None

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        self._headers.append((name, value))
        if name == b"expect":  # noted here: no scan of the headers per request for it
            self._asks_continue = value.lower() == b"100-continue"

    def on_headers_complete(self) -> None:
        parser = self.parser
        parsed = httptools.parse_url(self._url)
        raw_path: bytes = parsed.path
        path = raw_path.decode("ascii")
        if "%" in path:
            path = unquote(path)
        scope: dict[str, Any] = {
            "type": "http",
            "asgi": _ASGI,
            "http_version": parser.get_http_version(),
            "server": self.server,
            "client": self.client,
            "scheme": "http",
            "method": parser.get_method().decode("ascii"),
            "root_path": self.root_path,
            "path": path,
            "raw_path": raw_path,
            "query_string": parsed.query or b"",
            "headers": self._headers,
            "state": self.app_state.copy(),
        }
        exchange = Exchange(self, scope, parser.should_keep_alive())
        exchange.asks_continue = self._asks_continue
        if self.direct_route is not None and scope["method"] == "POST":
            exchange.route = self.direct_route(scope)
        self._parsing = exchange
        if self.current is None:
            self._start(exchange)
        else:  # pipelined: answered in order, after the one in flight
            self.pending.append(exchange)
            self._pause_reading()

    def on_body(self, body: bytes) -> None:
        exchange = self._parsing
        if exchange is not None:
            exchange.take(body)

    def on_message_complete(self) -> None:
        exchange = self._parsing
        if exchange is not None:
            self._parsing = None
            exchange.complete()

    # --- running the app -----------------------------------------------------------------

    def _start(self, exchange: Exchange) -> None:
        self.current = exchange
        if exchange.route is not None:
            # A direct route is called once its whole body is here (``Exchange.complete``).
            if exchange.done:
                self._launch(exchange)
            else:
                if self.transport is not None and exchange.asks_continue:
                    exchange.asks_continue = False
                    self.transport.write(_CONTINUE)  # the client waits for it to send the body
                self._resume_reading()
            return
        task = exchange.task = self.loop.create_task(self._run(exchange))
        self.server_state.tasks.add(task)  # uvicorn waits for them at shutdown

    def _launch(self, exchange: Exchange) -> None:
        """Answer a direct route: its handler gets the whole body and returns the answer.

        What the ASGI path costs per request and this one does not: the ``receive`` and two
        ``send`` calls with their messages, and the app's middleware and dispatch (the
        ``Guard`` has checked the request's token and declared length in ``direct_route``).
        """
        exchange.launched = True
        task = exchange.task = self.loop.create_task(self._run_direct(exchange))
        self.server_state.tasks.add(task)

    async def _run_direct(self, exchange: Exchange) -> None:
        try:
            chunks = exchange.body
            body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
            status, headers, content = await exchange.route.answer(exchange.scope, body)
            exchange.answer(status, headers, content)
        except asyncio.CancelledError:
            exchange.abort()
            self.server_state.tasks.discard(exchange.task)
            raise
        except Exception as exc:
            _app_failed(exchange, exc)
        # Dropped here, not by a done callback (one more loop turn per request).
        self.server_state.tasks.discard(exchange.task)
        self._finished(exchange)

    async def _run(self, exchange: Exchange) -> None:
        try:
            await self.app(exchange.scope, exchange.receive, exchange.send)
        except asyncio.CancelledError:
            self.server_state.tasks.discard(exchange.task)
            exchange.abort()
            raise
        except Exception as exc:
            _app_failed(exchange, exc)
        else:
            if not exchange.finished:
                if exchange.started:
                    logger.error("ASGI app returned before finishing its answer")
                    exchange.abort()
                else:
                    logger.error("ASGI app returned without answering")
                    exchange.fail()
        self.server_state.tasks.discard(exchange.task)
        self._finished(exchange)

    def _finished(self, exchange: Exchange) -> None:
        if self.current is exchange:
            self.current = None
        if self.transport is None:
            return
        if not exchange.keep_alive or self.closing:
            self.transport.close()
            return
        if self.pending:
            self._start(self.pending.popleft())
            return
        self._resume_reading()
        if self._parsing is None:  # no request half-read: the connection is idle
            self.idle_since = self.loop.time()
            if self.idle_timer is None:  # one timer per connection, re-armed when it fires
                self.idle_timer = self.loop.call_later(self.keepalive_seconds, self._idle_close)

    def default_headers(self) -> bytes:
        """uvicorn's default headers (``date``, ``server``), refreshed by it once a second."""
        source = self.server_state.default_headers
        if source is not self.default_source:
            self.default_source = source
            self.default_head = b"".join(b"%s: %s\r\n" % pair for pair in source)
        return self.default_head

    # --- flow control and closing --------------------------------------------------------

    def _pause_reading(self) -> None:
        if self.reading and self.transport is not None:
            self.reading = False
            self.transport.pause_reading()

    def _resume_reading(self) -> None:
        if not self.reading and self.transport is not None:
            self.reading = True
            self.transport.resume_reading()

    def _cancel_idle(self) -> None:
        if self.idle_timer is not None:
            self.idle_timer.cancel()
            self.idle_timer = None

    def _idle_close(self) -> None:
        """Close a connection idle for ``keepalive_seconds``; else look again when it may be.

        A timer per answer (set, then cancelled by the next request) cost CPU on every request;
        this one fires at most once per ``keepalive_seconds`` per connection.
        """
        self.idle_timer = None
        if self.transport is None or self.idle_since is None or self.current is not None:
            if self.transport is not None and self.current is None and not self.pending:
                self.idle_timer = self.loop.call_later(self.keepalive_seconds, self._idle_close)
            return
        left = self.idle_since + self.keepalive_seconds - self.loop.time()
        if left <= 0:
            self.transport.close()
        else:
            self.idle_timer = self.loop.call_later(left, self._idle_close)

    def _refuse(self, status: int, message: bytes) -> None:
        if self.transport is None:
            return
        if self.current is None or not self.current.started:
            self.transport.write(_plain(status, message))
        self.transport.close()


class Exchange:
    """One request and its answer: the ASGI ``receive`` and ``send`` of one app call."""

    __slots__ = (
        "asks_continue",
        "body",
        "buffered",
        "chunked",
        "done",
        "finished",
        "head_only",
        "headers",
        "keep_alive",
        "launched",
        "lost",
        "protocol",
        "route",
        "scope",
        "started",
        "status",
        "task",
        "waiter",
        "whole_body_sent",
    )

    def __init__(self, protocol: HttpProtocol, scope: dict[str, Any], keep_alive: bool) -> None:
        self.protocol = protocol
        self.scope = scope
        self.keep_alive = keep_alive
        self.body: list[bytes] = []
        self.buffered = 0
        self.done = False  # the whole request body has arrived
        self.lost = False  # the client went away
        self.waiter: asyncio.Future[None] | None = None
        self.asks_continue = False  # ``Expect: 100-continue``, until the go is sent
        self.whole_body_sent = False
        self.started = False
        self.finished = False
        self.chunked = False
        self.head_only = scope["method"] == "HEAD"
        self.status = 200
        self.headers: list[tuple[bytes, bytes]] = []
        self.route: Any = None  # a direct route (``HttpProtocol._launch``), else ASGI
        self.task: asyncio.Task[None] | None = None
        self.launched = False

    # --- from the protocol ---------------------------------------------------------------

    def take(self, body: bytes) -> None:
        self.body.append(body)
        self.buffered += len(body)
        # A direct route's body is read whole (its declared length is bounded by the Guard).
        if self.buffered > _READ_PAUSE_BYTES and self.route is None:
            self.protocol._pause_reading()
        self._wake()

    def complete(self) -> None:
        self.done = True
        if self.route is not None:
            if self.protocol.current is self and not self.launched:
                self.protocol._launch(self)
            return
        self._wake()

    def disconnect(self) -> None:
        self.lost = True
        self._wake()

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            if not waiter.done():
                waiter.set_result(None)

    # --- ASGI ----------------------------------------------------------------------------

    async def receive(self) -> dict[str, Any]:
        if self.whole_body_sent:
            # Only the end is left to tell: wait until the client goes or the answer is sent.
            while not (self.lost or self.finished):
                await self._wait()
            return _DISCONNECT
        while not (self.body or self.done or self.lost):
            if self.asks_continue:  # the client waits for a go before the body (once)
                self.asks_continue = False
                transport = self.protocol.transport
                if transport is not None:
                    transport.write(_CONTINUE)
            self.protocol._resume_reading()
            await self._wait()
        if self.lost:
            return _DISCONNECT
        chunks, self.body, self.buffered = self.body, [], 0
        body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        if self.done:
            self.whole_body_sent = True
        return {"type": "http.request", "body": body, "more_body": not self.done}

    async def _wait(self) -> None:
        waiter = self.protocol.loop.create_future()
        self.waiter = waiter
        await waiter

    async def send(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            if self.started:
                raise RuntimeError("the answer has started already")
            self.started = True
            self.status = message["status"]
            self.headers = message.get("headers", ())  # read once, when the head is written
            return
        if kind != "http.response.body":
            raise RuntimeError(f"unexpected ASGI message {kind!r}")
        if not self.started or self.finished:
            raise RuntimeError("http.response.body before http.response.start, or after the end")
        body: bytes = message.get("body", b"")
        more: bool = message.get("more_body", False)
        transport = self.protocol.transport
        if transport is None or self.lost:
            self.finished = not more
            return  # the client went away: what it would have read goes nowhere
        if self.headers is not _SENT:
            head = self._head(None if more else len(body))
            if self.head_only or self.status in _NO_BODY_STATUSES:
                transport.write(head)
            elif self.chunked:
                transport.write(head + _chunk(body, more))
            else:
                transport.write(head + body)
        elif not (self.head_only or self.status in _NO_BODY_STATUSES):
            if self.chunked:
                transport.write(_chunk(body, more))
            elif body:
                transport.write(body)
        if not more:
            self.finished = True
            self._wake()

    def answer(self, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
        """A direct route's whole answer, in one write."""
        self.started = self.finished = True
        transport = self.protocol.transport
        if transport is None or self.lost:
            return  # the client went away
        self.status, self.headers = status, headers
        head = self._head(len(body))
        if status in _NO_BODY_STATUSES:
            transport.write(head)
        else:
            transport.write(head + (_chunk(body, False) if self.chunked else body))

    def _head(self, length: int | None) -> bytes:
        """The status line and headers; a length or chunking added when the app set neither."""
        headers, self.headers = self.headers, _SENT
        status = self.status
        status_line = _STATUS_LINES.get(status)
        if status_line is None:
            status_line = b"HTTP/1.1 %d \r\n" % status
        lines = [status_line, self.protocol.default_headers()]
        framed = False
        written = 0
        for name, value in headers:
            lowered = name.lower()
            if lowered in _FRAMING:
                if lowered == b"connection":
                    if value.lower() == b"close":
                        self.keep_alive = False
                        continue  # added below, once
                else:
                    framed = True
                    self.chunked = lowered == b"transfer-encoding" and b"chunked" in value.lower()
            lines += (name, b": ", value, b"\r\n")
            written += 1
        if written:
            # A line break inside a name or value would inject a header: checked once over
            # the app's lines (each ends with the one CRLF added here), not per header.
            block = b"".join(lines[2:])
            if block.count(b"\n") != written or block.count(b"\r") != written:
                raise RuntimeError("invalid header: a line break in a name or value")
        if not framed and status not in _NO_BODY_STATUSES:
            if length is None:
                self.chunked = True
                lines.append(b"transfer-encoding: chunked\r\n")
            else:
                lines.append(b"content-length: %d\r\n" % length)
        if not self.keep_alive or self.protocol.closing:
            self.keep_alive = False
            lines.append(b"connection: close\r\n")
        lines.append(b"\r\n")
        return b"".join(lines)

    def fail(self) -> None:
        """A 500 for an app that raised (or returned) before answering."""
        transport = self.protocol.transport
        self.keep_alive = False
        self.finished = True
        if transport is not None:
            transport.write(_plain(500, b"Internal Server Error"))

    def abort(self) -> None:
        """An answer cut short: its connection cannot carry another."""
        self.keep_alive = False
        self.finished = True
        transport = self.protocol.transport
        if transport is not None:
            transport.close()


_FRAMING = frozenset({b"content-length", b"transfer-encoding", b"connection"})
_SENT: list[tuple[bytes, bytes]] = []
"""``Exchange.headers`` once the head is written (compared by identity, never filled)."""


def _chunk(body: bytes, more: bool) -> bytes:
    chunk = b"%x\r\n%s\r\n" % (len(body), body) if body else b""
    return chunk if more else chunk + b"0\r\n\r\n"


def _plain(status: int, message: bytes) -> bytes:
    return (
        b"HTTP/1.1 %d %s\r\ncontent-type: text/plain; charset=utf-8\r\n"
        b"content-length: %d\r\nconnection: close\r\n\r\n%s"
        % (status, _PHRASES.get(status, b""), len(message), message)
    )


def _address(info: Any) -> tuple[str, int] | None:
    if isinstance(info, tuple) and len(info) >= 2:
        return (str(info[0]), int(info[1]))
    return None


class _Detached:
    """What a closed connection's parser is replaced by: bytes after the close go nowhere."""

    def feed_data(self, data: bytes) -> None:
        pass


_DETACHED: Any = _Detached()


def _app_failed(exchange: Exchange, exc: Exception) -> None:
    """An app (or a direct route) raised: a 500 if nothing was sent yet, else cut the answer."""
    logger.error("Exception in ASGI application", exc_info=exc)
    if exchange.started:
        exchange.abort()
    else:
        exchange.fail()
