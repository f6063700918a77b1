"""One HTTP/1.1 keep-alive connection: write a request, parse its answer with llhttp.

A connection carries one request at a time (no pipelining). The answer is parsed by
``httptools`` (the C parser uvicorn uses) as bytes arrive; the waiting request is woken once,
when the answer is whole, when the connection breaks, or when its deadline passes. A
connection that was interrupted mid-answer is closed, never reused.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import httptools

from palaestra.transport.errors import ConnectionLost, ProtocolViolation


@dataclass(frozen=True, slots=True)
class HttpAnswer:
    """A whole HTTP answer; header names are lower-case (a repeated header keeps the last)."""

    status: int
    headers: dict[str, str]
    body: bytes


class Connection(asyncio.Protocol):
    """The protocol object of one transport; ``exchange`` is its only entry point."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._waiter: asyncio.Future[HttpAnswer] | None = None
        self._deadline: asyncio.TimerHandle | None = None
        self._status = 0
        self._headers: dict[str, str] = {}
        self._chunks: list[bytes] = []
        self._headers_done = False
        self._received = False
        self.closed = False
        self.reusable = True
        self.exchanges = 0
        self.idle_since = 0.0

    # --- the caller's side ---------------------------------------------------------------

    async def exchange(self, request: bytes, read_timeout: float) -> HttpAnswer:
        """Send ``request`` (head and body, already framed) and wait for the whole answer."""
        transport = self._transport
        if transport is None or self.closed:
            raise ConnectionLost("the connection was closed before the request was sent")
        waiter: asyncio.Future[HttpAnswer] = self._loop.create_future()
        self._waiter = waiter
        self._received = False
        self._deadline = self._loop.call_later(read_timeout, self._expire)
        transport.write(request)
        try:
            return await waiter
        except BaseException:
            # Timed out, cancelled or broken mid-answer: what comes next on this connection
            # would belong to the abandoned request.
            self.close()
            raise
        finally:
            self.exchanges += 1
            self._waiter = None
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

    @property
    def answered_nothing(self) -> bool:
        """True while no byte of the current answer has arrived (a safe moment to resend)."""
        return not self._received

    def close(self) -> None:
        self.reusable = False
        if self._transport is not None and not self.closed:
            self._transport.close()

    # --- asyncio.Protocol ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # uvloop's is no subclass

    def data_received(self, data: bytes) -> None:
        self._received = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(ProtocolViolation(f"the server's answer is not valid HTTP: {exc}"))
            self.close()

    def eof_received(self) -> bool | None:
        return None  # close the transport; connection_lost finishes the answer

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.reusable = False
        self._transport = None
        if self._waiter is None or self._waiter.done():
            return
        if self._headers_done and self._ends_at_close():
            self._finish()  # an answer without length or chunking ends when the server closes
            return
        detail = f": {exc}" if exc else ""
        self._fail(ConnectionLost(f"the server closed the connection mid-request{detail}"))

    # --- httptools callbacks -------------------------------------------------------------

    def on_message_begin(self) -> None:
        self._status = 0
        self._headers = {}
        self._chunks = []
        self._headers_done = False

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        self._status = self._parser.get_status_code()
        self._headers_done = True

    def on_body(self, body: bytes) -> None:
        self._chunks.append(body)

    def on_message_complete(self) -> None:
        self._headers_done = False  # a close from now on ends no answer (it cuts the next)
        if 100 <= self._status < 200:
            return  # an interim answer (100 Continue, 103 Early Hints); the real one follows
        if not self._parser.should_keep_alive():
            self.reusable = False
        self._finish()

    # --- internals -----------------------------------------------------------------------

    def _ends_at_close(self) -> bool:
        headers = self._headers
        return "content-length" not in headers and "chunked" not in headers.get(
            "transfer-encoding", ""
        )

    def _finish(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            body = self._chunks[0] if len(self._chunks) == 1 else b"".join(self._chunks)
            waiter.set_result(HttpAnswer(self._status, self._headers, body))
        self._chunks = []

    def _fail(self, error: Exception) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(error)

    def _expire(self) -> None:
        self._deadline = None
        self._fail(TimeoutError())
