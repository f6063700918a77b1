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

    Answers read off a connection keep the raw bytes of their head and parse its header lines
    only when asked: a model call reads the body, and the headers only when something failed.
    (llhttp checked the head's syntax as it arrived; asking it for each header instead costs
    a Python call per header line of every answer.)
    """

    __slots__ = ("_head", "_headers", "_raw_headers", "body", "status")

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.body = body
        self._headers: dict[str, str] | None = headers
        self._raw_headers: list[tuple[bytes, bytes]] | None = []
        self._head = b""

    @classmethod
    def parsed(cls, status: int, head: bytes, body: bytes) -> HttpAnswer:
        """An answer read off the wire: ``head`` is what arrived up to its end (1xx included)."""
        answer = cls.__new__(cls)
        answer.status, answer.body, answer._head = status, body, head
        answer._headers, answer._raw_headers = None, None
        return answer

    @property
    def raw_headers(self) -> list[tuple[bytes, bytes]]:
        """The header lines as received (names in their own case), in order."""
        if self._raw_headers is None:
            self._raw_headers = header_lines(self._head)
        return self._raw_headers

    @property
    def headers(self) -> dict[str, str]:
        if self._headers is None:
            self._headers = _decoded(self.raw_headers)
        return self._headers

    def header(self, name: str) -> str | None:
        """One header's value (the last if it repeats), without building ``headers``.

        Found in the head's bytes (cheaper than splitting every line first: an env client
        asks two per rollout); an answer after interim (1xx) heads, rare, is split into lines.
        """
        if self._headers is not None:
            return self._headers.get(name.lower())
        head = self._head
        if head[9:10] == b"1":
            return self._header_of_lines(name)
        end = head.find(b"\r\n\r\n")
        lowered = (head if end < 0 else head[: end + 2]).lower()
        at = lowered.rfind(b"\r\n" + name.lower().encode("latin-1") + b":")
        if at < 0:
            return None
        start = at + len(name) + 3
        return head[start : lowered.find(b"\r\n", start)].strip(b" \t").decode("latin-1")

    def _header_of_lines(self, name: str) -> str | None:
        wanted, found = name.lower().encode("latin-1"), None
        for raw_name, value in self.raw_headers:
            if raw_name.lower() == wanted:
                found = value
        return None if found is None else found.decode("latin-1")

    def header_values(self, name: str) -> list[str]:
        """Every value of a header that may repeat (``Set-Cookie``), in the order received."""
        wanted = name.lower()
        raw = self.raw_headers
        if not raw:
            value = (self._headers or {}).get(wanted)
            return [] if value is None else [value]
        return [
            value.decode("latin-1")
            for raw_name, value in raw
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


def header_lines(head: bytes) -> list[tuple[bytes, bytes]]:
    """The header lines of the last head in ``head`` that is not an interim (1xx) one.

    ``head`` starts at an answer's status line and reaches at least the end of its head;
    llhttp has checked its syntax (CRLF line ends, no folded lines). Interim answers before
    it (``100 Continue``) are skipped. Values lose the whitespace around them (RFC 9110 5.5).
    """
    start = 0
    while True:
        end = head.find(b"\r\n\r\n", start)
        lines = head[start : len(head) if end < 0 else end].split(b"\r\n")
        if end >= 0 and lines[0][9:10] == b"1":  # "HTTP/1.1 1xx": the real answer follows
            start = end + 4
            continue
        pairs: list[tuple[bytes, bytes]] = []
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            pairs.append((name, value.strip(b" \t")))
        return pairs


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
        self._deadline_at = 0.0
        self._head: list[bytes] = []
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
        loop = self.loop
        waiter: asyncio.Future[HttpAnswer] = loop.create_future()
        self._waiter = waiter
        # One deadline timer per connection, armed only when none would fire by this
        # request's deadline (a timer set and cancelled per request cost CPU every time); one that
        # fires before this request's deadline is re-armed for the rest.
        deadline = self._deadline_at = loop.time() + read_timeout
        if self._deadline is None or self._deadline.when() > deadline:
            if self._deadline is not None:
                self._deadline.cancel()
            self._deadline = loop.call_at(deadline, self._expire)
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

    @property
    def answered_nothing(self) -> bool:
        """True while no byte of the current answer has arrived (a safe moment to resend)."""
        return not self._received

    def close(self) -> None:
        self.reusable = False
        if self.loop.is_closed():  # opened under an earlier asyncio.run: nothing can run
            self.closed, self._transport, self._deadline = True, None, None
            return
        self._cancel_deadline()
        if self._transport is not None and not self.closed:
            self._transport.close()

    # --- asyncio.Protocol ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # uvloop's is no subclass

    def data_received(self, data: bytes) -> None:
        if self._waiter is None:
            self.close()  # bytes nobody asked for would corrupt the next answer's parse
            return
        self._received = True
        if not self._headers_done:
            self._head.append(data)  # parsed only if the headers are asked for (HttpAnswer)
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
        self._cancel_deadline()
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
    # (on_header would be one per header line): there are as few as the protocol needs.

    def on_headers_complete(self) -> None:
        self._headers_done = True

    def on_body(self, body: bytes) -> None:
        self._chunks.append(body)

    def on_message_complete(self) -> None:
        # From here on a close ends no answer: it would cut the next one.
        if 100 <= self._parser.get_status_code() < 200:
            # An interim answer (100 Continue, 103 Early Hints); the real one follows.
            self._chunks, self._headers_done = [], False  # its head stays: header_lines skips it
            return
        if not self._parser.should_keep_alive():
            self.reusable = False
        self._finish()

    # --- internals -----------------------------------------------------------------------

    def _ends_at_close(self) -> bool:
        headers = _decoded(header_lines(b"".join(self._head)))
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
            head = self._head
            waiter.set_result(
                HttpAnswer.parsed(status, head[0] if len(head) == 1 else b"".join(head), body)
            )
        self._head, self._chunks, self._headers_done = [], [], False

    def _fail(self, error: Exception) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(error)

    def _cancel_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        waiter = self._waiter
        if waiter is None or waiter.done():
            return  # no request waits: the next one arms a timer of its own
        left = self._deadline_at - self.loop.time()
        if left > 0:  # set for an earlier request: this one's deadline is later
            self._deadline = self.loop.call_at(self._deadline_at, self._expire)
            return
        self._fail(
            ReadTimeout(f"no whole answer within the read timeout ({self._read_timeout:g} s)")
        )
