"""The HTTP/1.1 client of palaestra's outbound calls: keep-alive pools, bounded connecting.

Why not aiohttp: a rollout's model calls are small JSON POSTs, and at thousands in flight the
per-request cost of a general client (middleware, cookie jars, multidicts, per-request
timers and tasks) is most of the collector's CPU. Here a request is one write and one parse
by llhttp on a pooled connection; measured numbers are in ``benchmarks/results/tuning.md``.

- One pool per origin (scheme, host, port); idle connections are reused most recent first,
  and dropped once idle for longer than ``keepalive`` seconds.
- At most ``max_connecting`` connections are being opened at once: ten thousand simultaneous
  connects overflow a server's listen backlog, and a dropped SYN costs a 1 s retransmit.
- A reused connection that dies before any byte of the answer arrived (the server closed it
  while idle) is replaced and the request sent again, once.
- No proxies, no redirects, no cookies, no compression: model endpoints need none of them.
"""

from __future__ import annotations

import asyncio
import collections
import ssl
from collections.abc import Mapping
from dataclasses import dataclass

import httptools

from palaestra.transport.connection import Connection, HttpAnswer
from palaestra.transport.errors import (
    ConnectFailed,
    ConnectionLost,
    InvalidUrl,
    TlsFailed,
    TransportError,
)
from palaestra.transport.gate import Gate
from palaestra.transport.resolver import Resolver

_DEFAULT_PORTS = {"http": 80, "https": 443}
_HEADS_KEPT = 1024


@dataclass(frozen=True, slots=True)
class Target:
    """Where a URL points: the pool key and what the request line and Host header say."""

    scheme: str
    host: str
    port: int
    path: str
    host_header: str

    @property
    def origin(self) -> tuple[str, str, int]:
        return (self.scheme, self.host, self.port)


def parse_target(url: str) -> Target:
    try:
        parsed = httptools.parse_url(url.encode())
    except (httptools.HttpParserInvalidURLError, UnicodeEncodeError):
        raise InvalidUrl(f"not a valid URL: {url!r}") from None
    scheme = (parsed.schema or b"").decode().lower()
    host = (parsed.host or b"").decode()
    if scheme not in _DEFAULT_PORTS or not host:
        raise InvalidUrl(f"not an http(s) URL with a host: {url!r}")
    if parsed.userinfo:
        raise InvalidUrl(f"credentials in URLs are not supported (use a header): {url!r}")
    port = _DEFAULT_PORTS[scheme] if parsed.port is None else parsed.port
    if port == 0:
        raise InvalidUrl(f"port 0 cannot be requested: {url!r}")
    path = (parsed.path or b"/").decode()
    if parsed.query:
        path = f"{path}?{parsed.query.decode()}"
    shown = f"[{host}]" if ":" in host else host
    host_header = shown if port == _DEFAULT_PORTS[scheme] else f"{shown}:{port}"
    return Target(scheme, host, port, path, host_header)


_FRAMING_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection"})
_DEFAULT_HEADERS = {"user-agent": "User-Agent: palaestra", "accept": "Accept: */*"}


def frame_head(method: str, target: Target, headers: Mapping[str, str]) -> bytes:
    """The request line and headers, up to the body's length.

    The client frames the request itself: a header with a line break, or one that would
    frame it differently (Host, Content-Length, Transfer-Encoding, Connection), is refused.
    The caller's User-Agent and Accept replace the defaults, whatever their case.
    """
    lines = [f"{method} {target.path} HTTP/1.1", f"Host: {target.host_header}"]
    defaults = dict(_DEFAULT_HEADERS)
    for name, value in headers.items():
        if "\r" in value or "\n" in value or "\r" in name or "\n" in name or ":" in name:
            raise ValueError(f"invalid HTTP header {name!r}")
        lowered = name.lower()
        if lowered in _FRAMING_HEADERS:
            raise ValueError(f"the HTTP client sets {name!r} itself")
        defaults.pop(lowered, None)
        lines.append(f"{name}: {value}")
    lines.extend(defaults.values())
    return ("\r\n".join(lines) + "\r\n").encode("latin-1")


def frame_request(
    method: str, target: Target, headers: Mapping[str, str], body: bytes | None
) -> bytes:
    """The request's bytes (see ``frame_head``); every request but a bodiless GET has a length."""
    return _with_body(frame_head(method, target, headers), method, body)


def _with_body(head: bytes, method: str, body: bytes | None) -> bytes:
    if body is None and method not in ("POST", "PUT", "PATCH"):
        return head + b"\r\n"
    length = len(body) if body else 0
    return b"".join((head, b"Content-Length: ", str(length).encode(), b"\r\n\r\n", body or b""))


class _OriginPool:
    """The idle connections to one origin, most recently used last."""

    def __init__(self, target: Target, client: HttpClient) -> None:
        self._target = target
        self._client = client
        self._idle: collections.deque[Connection] = collections.deque()

    def take_idle(self, loop: asyncio.AbstractEventLoop) -> Connection | None:
        """The most recently used live connection of this loop; stale ones are dropped."""
        idle, keepalive, now = self._idle, self._client.keepalive, loop.time()
        while idle and (idle[0].closed or now - idle[0].idle_since > keepalive):
            idle.popleft().close()  # the oldest are at the left: expiry stops at a live one
        while idle:
            connection = idle.pop()
            if connection.loop is not loop:  # opened under an earlier asyncio.run
                connection.close()
                continue
            if not connection.closed:
                return connection
        return None

    def give_back(self, connection: Connection, now: float) -> None:
        if connection.reusable and not connection.closed and not self._client.closing:
            connection.idle_since = now
            self._idle.append(connection)
        else:
            connection.close()

    async def open(self, connect_timeout: float) -> Connection:
        target = self._target
        async with self._client.connecting:
            try:
                async with asyncio.timeout(connect_timeout):
                    return await self._connect()
            except ssl.SSLError as exc:
                raise TlsFailed(f"TLS handshake with {target.host_header} failed: {exc}") from None
            except TimeoutError:
                raise ConnectFailed(f"connecting to {target.host_header} timed out") from None
            except OSError as exc:
                detail = exc.strerror or str(exc) or type(exc).__name__
                raise ConnectFailed(f"cannot connect to {target.host_header}: {detail}") from None

    async def _connect(self) -> Connection:
        """A connection to the first of the host's addresses that accepts one."""
        target, client = self._target, self._client
        loop = asyncio.get_running_loop()
        tls = client.tls_context() if target.scheme == "https" else None
        failure: OSError | None = None
        for address in await client.resolver.addresses(target.host, target.port):
            try:
                _, connection = await loop.create_connection(
                    lambda: Connection(loop),
                    address,
                    target.port,
                    ssl=tls,
                    server_hostname=target.host if tls else None,
                )
            except ssl.SSLError:
                raise
            except OSError as exc:
                failure = exc
            else:
                return connection
        assert failure is not None  # addresses() never answers an empty list
        raise failure

    def close(self) -> None:
        while self._idle:
            self._idle.pop().close()


class HttpClient:
    """Keep-alive HTTP/1.1 requests to any number of origins; close with ``aclose``.

    ``tls`` verifies https servers (default: the system's CA bundle, loaded on first use);
    pass a context of your own for a private CA.
    """

    def __init__(
        self,
        *,
        keepalive: float = 30.0,
        max_connecting: int = 256,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.keepalive = keepalive
        self.connecting = Gate(max_connecting)
        self.resolver = Resolver()
        self.closing = False
        self._pools: dict[tuple[str, str, int], _OriginPool] = {}
        self._heads: dict[tuple[object, ...], tuple[_OriginPool, bytes]] = {}
        self._tls = tls

    def tls_context(self) -> ssl.SSLContext:
        if self._tls is None:  # loading the CA bundle costs milliseconds: once, when needed
            self._tls = ssl.create_default_context()
        return self._tls

    async def request(
        self,
        method: str,
        url: str,
        *,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        connect_timeout: float = 10.0,
        read_timeout: float = 600.0,
    ) -> HttpAnswer:
        """Send one request and return the whole answer (any status).

        Raises ``InvalidUrl``, ``ConnectFailed``, ``TlsFailed``, ``ConnectionLost``,
        ``ProtocolViolation`` or ``TimeoutError`` (no whole answer within ``read_timeout``
        seconds of sending).
        """
        if self.closing:
            raise TransportError("the HTTP client is closed")
        if method == "HEAD":  # its answer's length describes a body that never comes
            raise ValueError("HEAD requests are not supported")
        pool, head = self._route(method, url, headers)
        request = _with_body(head, method, body)
        loop = asyncio.get_running_loop()
        connection = pool.take_idle(loop)
        if connection is not None:
            try:
                answer = await connection.exchange(request, read_timeout)
            except ConnectionLost:
                if not connection.answered_nothing:
                    raise
                connection = None  # it had died while idle: one fresh try below
            else:
                pool.give_back(connection, loop.time())
                return answer
        connection = await pool.open(connect_timeout)
        answer = await connection.exchange(request, read_timeout)
        pool.give_back(connection, loop.time())
        return answer

    def _route(
        self, method: str, url: str, headers: Mapping[str, str] | None
    ) -> tuple[_OriginPool, bytes]:
        """The pool and the framed head for a request; a model's requests repeat both."""
        key = (method, url, *headers.items()) if headers else (method, url)
        found = self._heads.get(key)
        if found is None:
            target = parse_target(url)
            head = frame_head(method, target, headers or {})
            pool = self._pools.get(target.origin)
            if pool is None:
                pool = self._pools[target.origin] = _OriginPool(target, self)
            found = (pool, head)
            # Per-session headers (cookies) must not grow it forever; once it is full, new
            # heads are framed each time and the first ones (a model's) stay cached.
            if len(self._heads) < _HEADS_KEPT:
                self._heads[key] = found
        return found

    async def aclose(self) -> None:
        """Close every idle connection; requests still running close theirs when they end."""
        self.closing = True
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()
        self._heads.clear()
        await asyncio.sleep(0)  # let the transports run their close callbacks
