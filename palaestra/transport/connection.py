"""One HTTP/1.1 keep-alive connection: write a request, parse its answer with llhttp.

A connection carries one request at a time (no pipelining). The answer is parsed by
``httptools`` (the C parser uvicorn uses) as bytes arrive; the waiting request is woken once,
when the answer is whole, when the connection breaks, or when its deadline passes. A
connection that was interrupted mid-answer is closed, never reused.
"""

from __future__ import annotations

import asyncio

import httptools

from palaestra.transport.errors import (
    AnswerTooLarge,
    ConnectionLost,
    ProtocolViolation,
    ReadTimeout,
)


class HttpAnswer:
    """A whole HTTP answer; ``headers`` has lower-case names (a repeated header keeps the last).

    Answers read off a connection keep the raw header pairs llhttp reported and decode them
    only when asked: a model call reads the body, and the headers only when something failed.
    """

    __slots__ = ("_headers", "_raw_headers", "body", "status")

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.body = body
        self._headers: dict[str, str] | None = headers
        self._raw_headers: list[tuple[bytes, bytes]] = []

    @classmethod
    def parsed(cls, status: int, raw_headers: list[tuple[bytes, bytes]], body: bytes) -> HttpAnswer:
        answer = cls.__new__(cls)
        answer.status, answer.body = status, body
        answer._headers, answer._raw_headers = None, raw_headers
        return answer

    @property
    def headers(self) -> dict[str, str]:
        if self._headers is None:
            self._headers = _decoded(self._raw_headers)
        return self._headers

    def header_values(self, name: str) -> list[str]:
        """Every value of a header that may repeat (``Set-Cookie``), in the order received."""
        wanted = name.lower()
        if not self._raw_headers:
            value = (self._headers or {}).get(wanted)
            return [] if value is None else [value]
        return [
            value.decode("latin-1")
            for raw_name, value in self._raw_headers
            if raw_name.decode("latin-1").lower() == wanted
        ]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HttpAnswer):
            return NotImplemented
        return (self.status, self.headers, self.body) == (other.status, other.headers, other.body)

    __hash__ = None  # type: ignore[assignment]  # mutable-looking value object, like a dataclass

    def __repr__(self) -> str:
        return f"HttpAnswer(status={self.status}, headers={self.headers}, body={self.body!r:.80})"


def _decoded(raw_headers: list[tuple[bytes, bytes]]) -> dict[str, str]:
    return {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in raw_headers}


_DETACHED = httptools.HttpResponseParser(object())
"""What a closed connection parses with: it refers to no protocol and is never fed."""


class Connection(asyncio.Protocol):
    """The protocol object of one transport; ``exchange`` is its only entry point."""

    def __init__(self, loop: asyncio.AbstractEventLoop, max_answer_bytes: int) -> None:
        self.loop = loop
        self._max_answer_bytes = max_answer_bytes
        self._answer_bytes = 0
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._waiter: asyncio.Future[HttpAnswer] | None = None
        self._deadline: asyncio.TimerHandle | None = None
        self._raw_headers: list[tuple[bytes, bytes]] = []
        self._chunks: list[bytes] = []
        self._headers_done = False
        self._received = False
        self.closed = False
        self.reusable = True
        self.exchanges = 0
        self.idle_since = 0.0
        self._read_timeout = 0.0

    # --- the caller's side ---------------------------------------------------------------

    async def exchange(self, request: bytes, read_timeout: float) -> HttpAnswer:
        """Send ``request`` (head and body, already framed) and wait for the whole answer."""
        self._received = False
        self._answer_bytes = 0
        self._read_timeout = read_timeout
        transport = self._transport
        if transport is None or self.closed:
            raise ConnectionLost("the connection was closed before the request was sent")
        waiter: asyncio.Future[HttpAnswer] = self.loop.create_future()
        self._waiter = waiter
        self._deadline = self.loop.call_later(read_timeout, self._expire)
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
            if self.loop.is_closed():  # opened under an earlier asyncio.run: nothing can run
                self.closed, self._transport = True, None
                return
            self._transport.close()

    # --- asyncio.Protocol ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # uvloop's is no subclass

    def data_received(self, data: bytes) -> None:
        if self._waiter is None:
            self.close()  # bytes nobody asked for would corrupt the next answer's parse
            return
        self._received = True
        self._answer_bytes += len(data)
        if self._answer_bytes > self._max_answer_bytes:
            cap = f"max_answer_bytes, {self._max_answer_bytes:,} bytes"
            self._fail(AnswerTooLarge(f"the answer is larger than the client's cap ({cap})"))
            self.close()
            return
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
        try:
            if self._waiter is None or self._waiter.done():
                return
            if exc is None and self._headers_done and self._ends_at_close():
                # An answer without length or chunking ends when the server closes (not resets).
                self._finish()
                return
            detail = f": {exc}" if exc else ""
            self._fail(ConnectionLost(f"the server closed the connection mid-request{detail}"))
        finally:
            # The parser refers back to this protocol: without this a closed connection is
            # cyclic garbage, freed only when the (deliberately rare) collector runs.
            self._parser = _DETACHED

    # --- httptools callbacks -------------------------------------------------------------

    # httptools calls only the callbacks a protocol defines, each a Python call per answer
    # (per header for on_header): there are as few as the protocol needs.

    def on_header(self, name: bytes, value: bytes) -> None:
        self._raw_headers.append((name, value))

    def on_headers_complete(self) -> None:
        self._headers_done = True

    def on_body(self, body: bytes) -> None:
        self._chunks.append(body)

    def on_message_complete(self) -> None:
        # From here on a close ends no answer: it would cut the next one.
        if 100 <= self._parser.get_status_code() < 200:
            # An interim answer (100 Continue, 103 Early Hints); the real one follows.
            self._raw_headers, self._chunks, self._headers_done = [], [], False
            return
        if not self._parser.should_keep_alive():
            self.reusable = False
        self._finish()

    # --- internals -----------------------------------------------------------------------

    def _ends_at_close(self) -> bool:
        headers = _decoded(self._raw_headers)
        return "content-length" not in headers and "chunked" not in headers.get(
            "transfer-encoding", ""
        )

    def _finish(self) -> None:
        waiter, chunks = self._waiter, self._chunks
        if waiter is None or waiter.done():
            self.reusable = False  # a second answer to one request: the stream is out of step
        else:
            body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
            status = self._parser.get_status_code()
            waiter.set_result(HttpAnswer.parsed(status, self._raw_headers, body))
        self._raw_headers, self._chunks, self._headers_done = [], [], False

    def _fail(self, error: Exception) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(error)

    def _expire(self) -> None:
        self._deadline = None
        self._fail(
            ReadTimeout(f"no whole answer within the read timeout ({self._read_timeout:g} s)")
        )
