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
  while idle, just as the request went out) is replaced and the request sent again, once, but
  only if the request is idempotent: a GET, PUT, DELETE or OPTIONS, or one the caller marks
  ``idempotent=True`` (a model call). Anything else (a remote tool call, a verify) may have
  run on the server, so it raises ``ConnectionLost`` instead of running twice.
- HTTP proxies (``proxy.py``): absolute-form requests for http URLs, a CONNECT tunnel with
  TLS inside for https URLs; by default from the environment, read when the client is built.
- Answers larger than ``max_answer_bytes`` (64 MiB) are cut off with ``AnswerTooLarge``.
- ``http+unix://`` URLs (``unix_url``) reach a server on a Unix socket, as the servers of
  one ``palaestra run`` stack reach each other: no TCP stack on either side, 12% less CPU per
  served rollout than loopback TCP (``benchmarks/results/serving.md``).
- No redirects, no cookies, no compression: model endpoints need none of them.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import functools
import ssl
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass

import httptools

from palaestra.transport.connection import Connection, HttpAnswer
from palaestra.transport.dial import Tunnel, first_to_connect
from palaestra.transport.errors import (
    ConnectFailed,
    ConnectionLost,
    ConnectTimeout,
    InvalidUrl,
    TlsFailed,
    TransportError,
)
from palaestra.transport.gate import Gate
from palaestra.transport.proxy import Proxies, ProxyEndpoint
from palaestra.transport.resolver import Resolver

_DEFAULT_PORTS = {"http": 80, "https": 443}
UNIX_SCHEME = "http+unix"
"""HTTP over a Unix socket: ``http+unix://<the socket's path, percent-encoded>/<path>``."""
_HEADS_KEPT = 1024
_IDEMPOTENT_METHODS = frozenset({"GET", "PUT", "DELETE", "OPTIONS"})  # RFC 9110, 9.2.2


@dataclass(frozen=True, slots=True)
class Target:
    """Where a URL points: the pool key and what the request line and Host header say."""

    scheme: str
    host: str
    port: int
    path: str
    host_header: str
    proxy: ProxyEndpoint | None = None

    @property
    def origin(self) -> tuple[str, str, int]:
        return (self.scheme, self.host, self.port)

    @property
    def authority(self) -> str:
        """``host:port`` as a CONNECT request names it."""
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    @property
    def shown(self) -> str:
        """The server as messages name it, with the proxy in between if there is one."""
        if self.scheme == UNIX_SCHEME:
            return f"unix:{self.host}"
        if self.proxy is None:
            return self.host_header
        return f"{self.host_header} through proxy {self.proxy.shown}"


def unix_url(socket_path: str) -> str:
    """The base URL of a server listening on the Unix socket at ``socket_path``."""
    return f"{UNIX_SCHEME}://{urllib.parse.quote(socket_path, safe='')}"


_SECRET_PARAMS = frozenset(
    {
        "key",
        "api_key",
        "api-key",
        "apikey",
        "access_token",
        "token",
        "auth",
        "password",
        "secret",
        "sig",
        "signature",
    }
)
"""Query parameters whose values are credentials (``?api_key=...``): never shown."""
REDACTED = "***"


def _userinfo_end(url: str) -> int:
    """Where the ``@`` ending ``url``'s userinfo is, or -1. Sought up to the query, not only
    in the authority: a password with an unescaped ``/`` in it is hidden too (a path with an
    ``@`` in it is hidden with it, which only costs a reader the host)."""
    start = url.find("://") + 3
    if start < 3:
        return -1
    ends = [found for found in (url.find(mark, start) for mark in "?#") if found >= 0]
    return url.rfind("@", start, min(ends, default=len(url)))


def has_credentials(url: str) -> bool:
    """Whether ``url`` carries a userinfo (``user:password@``), which no client here sends."""
    return _userinfo_end(url) >= 0


def redacted_url(url: str) -> str:
    """``url`` without its credentials: the userinfo (``user:password@``) and the values of
    credential query parameters (``_SECRET_PARAMS``) become ``***``. Everything else stays as
    written, so two spellings of one URL stay two, and a URL without credentials is returned
    unchanged (the same object: a caller may compare)."""
    start = url.find("://") + 3
    if start < 3:
        return url
    at = _userinfo_end(url)
    shown = url if at < 0 else f"{url[:start]}{REDACTED}{url[at:]}"
    query = shown.find("?", start)
    if query < 0:
        return shown
    fragment = shown.find("#", query)
    end = len(shown) if fragment < 0 else fragment
    pairs = shown[query + 1 : end].split("&")
    hidden = [
        f"{name}={REDACTED}" if sep and name.lower() in _SECRET_PARAMS else pair
        for pair in pairs
        for name, sep, _ in [pair.partition("=")]
    ]
    if hidden == pairs:
        return shown
    return f"{shown[: query + 1]}{'&'.join(hidden)}{shown[end:]}"


def shown_url(url: str) -> str:
    """``url`` as a message names it: the one place a URL is formatted for a reader. An
    ``http+unix`` URL in the transport's ``shown`` form, ``unix:<socket path>`` plus its route
    (its percent-encoding is for parsers, not readers); any other URL without its credentials
    (``redacted_url``)."""
    if not url.startswith(UNIX_SCHEME + "://"):
        return redacted_url(url)
    socket_path, route = _unix_parts(url)
    return f"unix:{socket_path}{route}"


def parse_target(url: str) -> Target:
    if url.startswith(UNIX_SCHEME + "://"):
        return _unix_target(url)
    try:
        parsed = httptools.parse_url(url.encode())
    except (httptools.HttpParserInvalidURLError, UnicodeEncodeError):
        raise InvalidUrl(f"not a valid URL: {shown_url(url)!r}") from None
    scheme = (parsed.schema or b"").decode().lower()
    host = (parsed.host or b"").decode()
    if scheme not in _DEFAULT_PORTS or not host:
        raise InvalidUrl(f"not an http(s) URL with a host: {shown_url(url)!r}")
    if parsed.userinfo:
        raise InvalidUrl("credentials in URLs are not supported (use a header)")
    port = _DEFAULT_PORTS[scheme] if parsed.port is None else parsed.port
    if port == 0:
        raise InvalidUrl(f"port 0 cannot be requested: {shown_url(url)!r}")
    path = (parsed.path or b"/").decode()
    if parsed.query:
        path = f"{path}?{parsed.query.decode()}"
    shown = f"[{host}]" if ":" in host else host
    host_header = shown if port == _DEFAULT_PORTS[scheme] else f"{shown}:{port}"
    return Target(scheme, host, port, path, host_header)


def _unix_target(url: str) -> Target:
    """A socket path in place of host and port; the Host header says ``localhost``."""
    socket_path, route = _unix_parts(url)
    if not socket_path.startswith("/"):
        raise InvalidUrl(f"not an {UNIX_SCHEME} URL with an absolute socket path: {url!r}")
    return Target(UNIX_SCHEME, socket_path, 0, route or "/", "localhost")


def _unix_parts(url: str) -> tuple[str, str]:
    """An ``http+unix`` URL's socket path (decoded) and its route (``""`` or from ``/`` on)."""
    quoted, slash, rest = url[len(UNIX_SCHEME) + 3 :].partition("/")
    return urllib.parse.unquote(quoted), slash + rest


_FRAMING_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection"})
_DEFAULT_HEADERS = {"user-agent": "User-Agent: palaestra", "accept": "Accept: */*"}


def frame_head(method: str, target: Target, headers: Mapping[str, str]) -> bytes:
    """The request line and headers, up to the body's length.

    The client frames the request itself: a header with a line break, or one that would
    frame it differently (Host, Content-Length, Transfer-Encoding, Connection), is refused.
    The caller's User-Agent and Accept replace the defaults, whatever their case.
    """
    return _request_line(method, target) + _header_block(headers)


def _request_line(method: str, target: Target) -> bytes:
    """The request line and the Host header (and the proxy's authorization, if any)."""
    lines = [f"{method} {target.path} HTTP/1.1", f"Host: {target.host_header}"]
    if target.proxy is not None and target.scheme == "http":  # the proxy forwards it as is
        lines[0] = f"{method} http://{target.authority}{target.path} HTTP/1.1"
        if target.proxy.authorization is not None:
            lines.append(f"Proxy-Authorization: {target.proxy.authorization}")
    return ("\r\n".join(lines) + "\r\n").encode("latin-1")


def _header_block(headers: Mapping[str, str]) -> bytes:
    """The caller's header lines and the defaults it did not replace (see ``frame_head``)."""
    lines: list[str] = []
    defaults = dict(_DEFAULT_HEADERS)
    for name, value in headers.items():
        defaults.pop(_checked(name, value), None)
        lines.append(f"{name}: {value}")
    lines.extend(defaults.values())
    return ("\r\n".join(lines) + "\r\n").encode("latin-1")


def _checked(name: str, value: str) -> str:
    """``name`` in lower case; ``ValueError`` for a header that would break or reframe the head."""
    if "\r" in value or "\n" in value or "\r" in name or "\n" in name or ":" in name:
        raise ValueError(f"invalid HTTP header {name!r}")
    lowered = name.lower()
    if lowered in _FRAMING_HEADERS:
        raise ValueError(f"the HTTP client sets {name!r} itself")
    return lowered


class FramedHeaders:
    """Request headers checked and framed once, for many requests to several URLs.

    A remote environment's session sends the same headers (its token among them) to each
    route it calls: framing them per request is work repeated for nothing, and they miss the
    client's cache of whole heads, which is keyed by URL and headers and bounded.
    """

    __slots__ = ("block", "items")

    def __init__(self, headers: Mapping[str, str]) -> None:
        self.items = dict(headers)
        self.block = _header_block(self.items)  # raises ValueError as frame_head does

    def adding(self, name: str, value: str) -> FramedHeaders:
        """These headers and one line more, the others not framed again (a session's or a
        rollout's header on top of an endpoint's: cheaper than framing a whole block).
        ``name`` must be new here and not one of the client's defaults (User-Agent, Accept)."""
        if _checked(name, value) in _DEFAULT_HEADERS:
            raise ValueError(f"{name!r} replaces a default: frame the headers whole")
        added = FramedHeaders.__new__(FramedHeaders)
        added.items = {**self.items, name: value}
        added.block = self.block + f"{name}: {value}\r\n".encode("latin-1")
        return added


def _with_body(head: bytes, method: str, body: bytes | None) -> bytes:
    if body is None and method not in ("POST", "PUT", "PATCH"):
        return head + b"\r\n"
    length = len(body) if body else 0
    return b"".join((head, b"Content-Length: ", str(length).encode(), b"\r\n\r\n", body or b""))


class _OriginPool:
    """The idle connections to one origin, most recently used last."""

    def __init__(self, target: Target, client: HttpClient) -> None:
        self.target = target
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
        target = self.target
        async with self._client.connecting:
            try:
                async with asyncio.timeout(connect_timeout):
                    return await self._connect()
            except ssl.SSLError as exc:
                raise TlsFailed(f"TLS handshake with {target.shown} failed: {exc}") from None
            except TimeoutError:
                raise ConnectTimeout(
                    f"connecting to {target.shown} timed out ({connect_timeout:g} s)"
                ) from None
            except ConnectFailed:
                raise
            except OSError as exc:
                detail = exc.strerror or str(exc) or type(exc).__name__
                raise ConnectFailed(f"cannot connect to {target.shown}: {detail}") from None

    async def _connect(self) -> Connection:
        """A connection to the server (or its proxy), its addresses raced as ``dial`` says."""
        target, client = self.target, self._client
        loop = asyncio.get_running_loop()
        factory = functools.partial(Connection, loop, client.max_answer_bytes)
        if target.scheme == UNIX_SCHEME:
            _, connection = await loop.create_unix_connection(factory, target.host)
            return connection
        tls = client.tls_context() if target.scheme == "https" else None
        proxy = target.proxy
        host, port = (target.host, target.port) if proxy is None else (proxy.host, proxy.port)
        addresses = await client.resolver.addresses(host, port)
        if proxy is not None and tls is not None:
            return await self._tunnel(loop, addresses, proxy, tls)
        _, connection = await first_to_connect(
            addresses,
            lambda address: loop.create_connection(
                factory, address, port, ssl=tls, server_hostname=host if tls else None
            ),
        )
        return connection

    async def _tunnel(
        self,
        loop: asyncio.AbstractEventLoop,
        addresses: list[str],
        proxy: ProxyEndpoint,
        tls: ssl.SSLContext,
    ) -> Connection:
        """A CONNECT tunnel through the proxy, then TLS with the server inside it."""
        target = self.target
        transport, tunnel = await first_to_connect(
            addresses, lambda address: loop.create_connection(Tunnel, address, proxy.port)
        )
        try:
            await tunnel.open(target.authority, proxy.authorization, proxy.shown)
            connection = Connection(loop, self._client.max_answer_bytes)
            inner = await loop.start_tls(transport, connection, tls, server_hostname=target.host)
        except BaseException:
            transport.close()
            raise
        assert inner is not None
        connection.connection_made(inner)
        return connection

    def close(self) -> None:
        while self._idle:
            self._idle.pop().close()


class HttpClient:
    """Keep-alive HTTP/1.1 requests to any number of origins; close with ``aclose``.

    ``tls`` verifies https servers (default: the system's CA bundle, loaded on first use);
    pass a context of your own for a private CA. ``proxies`` says which requests go through an
    HTTP proxy; the default (``None``) reads ``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY`` and
    ``NO_PROXY`` from the environment once, now (``Proxies()`` connects directly whatever the
    environment says). An answer larger than ``max_answer_bytes`` raises ``AnswerTooLarge``.
    """

    def __init__(
        self,
        *,
        keepalive: float = 30.0,
        max_connecting: int = 256,
        tls: ssl.SSLContext | None = None,
        proxies: Proxies | None = None,
        max_answer_bytes: int = 64 * 2**20,
    ) -> None:
        self.keepalive = keepalive
        self.connecting = Gate(max_connecting)
        self.resolver = Resolver()
        self.proxies = Proxies.from_environment() if proxies is None else proxies
        self.max_answer_bytes = max_answer_bytes
        self.closing = False
        self._pools: dict[tuple[str, str, int], _OriginPool] = {}
        self._heads: dict[tuple[object, ...], tuple[_OriginPool, bytes]] = {}
        self._targets: dict[str, tuple[_OriginPool, Target]] = {}
        self._lines: dict[tuple[str, str], tuple[_OriginPool, bytes]] = {}
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
        headers: Mapping[str, str] | FramedHeaders | None = None,
        connect_timeout: float = 10.0,
        read_timeout: float = 600.0,
        idempotent: bool | None = None,
    ) -> HttpAnswer:
        """Send one request and return the whole answer (any status).

        ``idempotent`` says whether running the request twice does no harm, which lets it be
        resent once on a fresh connection when a reused one turns out to have died before any
        byte of the answer came back. The default is the method's own (RFC 9110: GET, PUT,
        DELETE and OPTIONS are; POST is not): pass ``True`` for a POST that may repeat (a model
        call), never for one that must not (a remote tool call).

        Raises ``InvalidUrl``, ``ConnectFailed`` (``ConnectTimeout`` when the connect timeout
        passed), ``TlsFailed``, ``ConnectionLost``, ``ProtocolViolation``, ``AnswerTooLarge``
        or ``ReadTimeout`` (no whole answer within ``read_timeout`` seconds of sending). Both
        timeouts are ``TimeoutError`` too.
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
            except ConnectionLost as exc:
                if not connection.answered_nothing:
                    raise
                if not (method in _IDEMPOTENT_METHODS if idempotent is None else idempotent):
                    raise ConnectionLost(
                        f"{exc}; not resent: the request is not idempotent, and the server may"
                        " have run it (a kept-alive connection it closed just as it was sent)"
                    ) from None
                connection = None  # it had died while idle: one fresh try below
            else:
                pool.give_back(connection, loop.time())
                return answer
        connection = await pool.open(connect_timeout)
        answer = await connection.exchange(request, read_timeout)
        pool.give_back(connection, loop.time())
        return answer

    def _route(
        self, method: str, url: str, headers: Mapping[str, str] | FramedHeaders | None
    ) -> tuple[_OriginPool, bytes]:
        """The pool and the framed head for a request; a model's requests repeat both."""
        if isinstance(headers, FramedHeaders):
            lined = self._lines.get((method, url))
            if lined is None:
                pool, target = self._routed(url)
                lined = (pool, _request_line(method, target))
                if len(self._lines) < _HEADS_KEPT:
                    self._lines[(method, url)] = lined
            return lined[0], lined[1] + headers.block
        key = (method, url, *headers.items()) if headers else (method, url)
        found = self._heads.get(key)
        if found is None:
            # Requests with per-request headers miss the head cache; their URL's pool and
            # target are kept apart, so only the head is framed again.
            pool, target = self._routed(url)
            head = frame_head(method, target, headers or {})
            found = (pool, head)
            # Per-session headers (cookies) must not grow it forever; once it is full, new
            # heads are framed each time and the first ones (a model's) stay cached.
            if len(self._heads) < _HEADS_KEPT:
                self._heads[key] = found
        return found

    def _routed(self, url: str) -> tuple[_OriginPool, Target]:
        routed = self._targets.get(url)
        if routed is None:
            routed = self._target_of(url)
            if len(self._targets) < _HEADS_KEPT:
                self._targets[url] = routed
        return routed

    def _target_of(self, url: str) -> tuple[_OriginPool, Target]:
        target = parse_target(url)
        pool = self._pools.get(target.origin)
        if pool is None:
            proxy = (
                None
                if target.scheme == UNIX_SCHEME
                else self.proxies.route(target.scheme, target.host, target.port)
            )
            target = dataclasses.replace(target, proxy=proxy)
            pool = self._pools[target.origin] = _OriginPool(target, self)
        if pool.target.proxy is not None:
            target = dataclasses.replace(target, proxy=pool.target.proxy)
        return pool, target

    async def aclose(self) -> None:
        """Close every idle connection; requests still running close theirs when they end."""
        self.closing = True
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()
        self._heads.clear()
        self._targets.clear()
        self._lines.clear()
        await asyncio.sleep(0)  # let the transports run their close callbacks
