"""A filtering HTTP proxy for one box: the hosts a task names pass, everything else is
refused and counted.

A box has no network (``netns``): what it can reach is one port of its own ``127.0.0.1``,
where this proxy listens (``serve_in``), told to programs by ``http_proxy``/``https_proxy``
(``environment``). It speaks the two forms every HTTP client uses through a proxy: ``CONNECT
host:port`` (HTTPS and any TLS: the bytes are relayed, never read) and a plain HTTP request in
absolute form (``GET http://host/path``: forwarded to the host with ``Connection: close``).

What passes is decided per request, by the policy in force (``Policy``: the task's allowlist
for the phase that runs, switched by the runner with ``enter``):

- the host must be named: a hostname exactly, or under a ``*.suffix`` entry, an address
  literal by an address or CIDR entry (Harbor's allowlist entries);
- then the host is resolved here and every address it has must be a public one: a name or
  literal that leads to a loopback, private, link-local or otherwise non-global address is
  refused unless the user (never the task) named that range (``private``). A task's author
  cannot point a box at the host's services or its network's by naming them;
- the connection goes to the address checked, never to a second resolution.

Each request is counted by phase and host (``tally``): ``allowed``, ``refused`` (with why, the
first time), ``failed`` (allowed, but the host could not be reached). A program that ignores
the proxy variables reaches nothing at all (no route), and is not counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from palaestra.sandbox.machines.netns import listen_in
from palaestra.types import JsonDict

PROXY_PORT = 3128
"""The port of the box's ``127.0.0.1`` the proxy listens on."""
HEAD_CAP = 64 << 10
"""Bytes of a request's head (its line and headers) read before it is refused."""
HEAD_TIMEOUT = 30.0
CONNECT_TIMEOUT = 20.0
CHUNK = 1 << 16
HOP_HEADERS = frozenset({"proxy-connection", "proxy-authorization", "connection", "keep-alive"})

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True, slots=True)
class Policy:
    """What a phase may reach: ``hosts`` (Harbor's normalised allowlist entries), or every
    host when ``public`` (a policy the user opted into). The empty policy is no network."""

    hosts: tuple[str, ...] = ()
    public: bool = False

    def refusal(self, host: str) -> str | None:
        """Why ``host`` (lower case, no trailing dot) is not allowed, or None."""
        if self.public:
            return None
        if not self.hosts:
            return "this phase has no network"
        literal = _address(host)
        for entry in self.hosts:
            if literal is not None:
                if "/" in entry and literal in ipaddress.ip_network(entry, strict=False):
                    return None
                if _address(entry) == literal:
                    return None
            elif entry == host or (entry.startswith("*.") and host.endswith(entry[1:])):
                return None
        return "not in the task's allowlist"


NO_NETWORK = Policy()


@dataclass(slots=True)
class Tally:
    """Requests of one phase, by host."""

    allowed: dict[str, int] = field(default_factory=dict)
    refused: dict[str, int] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)
    why: dict[str, str] = field(default_factory=dict)
    """Per refused or failed host, the first reason."""

    def row(self) -> JsonDict:
        found: JsonDict = {}
        for name in ("allowed", "refused", "failed", "why"):
            value = getattr(self, name)
            if value:
                found[name] = dict(value)
        return found


class EgressProxy:
    """The proxy of one box: ``serve_in`` its namespace, ``enter`` each phase's policy,
    ``tally`` for the row, ``close`` at the end."""

    def __init__(self, private: Iterable[str] = ()) -> None:
        """``private``: addresses or CIDR ranges the user lets a box reach although they are
        not public (a stand-in server on the host's loopback, a mirror on the local network)."""
        self.private: tuple[Network, ...] = tuple(
            ipaddress.ip_network(entry, strict=False) for entry in private
        )
        self.phase = "environment"
        self.policy = NO_NETWORK
        self.phases: dict[str, Tally] = {}
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.StreamWriter] = set()

    @staticmethod
    def environment() -> dict[str, str]:
        """The variables that send a box's HTTP clients to the proxy (the box's own
        loopback names excepted: a server the box runs stays the box's)."""
        url = f"http://127.0.0.1:{PROXY_PORT}"
        bypass = "localhost,127.0.0.1,::1"
        return {
            "http_proxy": url,
            "https_proxy": url,
            "HTTP_PROXY": url,
            "HTTPS_PROXY": url,
            "no_proxy": bypass,
            "NO_PROXY": bypass,
        }

    def enter(self, phase: str, policy: Policy) -> None:
        """From now on, requests count under ``phase`` and pass by ``policy``."""
        self.phase, self.policy = phase, policy

    def tally(self) -> JsonDict:
        """Per phase that made requests: what was allowed, refused and failed, by host."""
        return {phase: tally.row() for phase, tally in self.phases.items()}

    def refused(self) -> int:
        return sum(sum(tally.refused.values()) for tally in self.phases.values())

    async def serve_in(self, namespace: str) -> None:
        """Listen in the network namespace at ``namespace`` (again: a box whose namespace was
        replaced, a container restarted by its seal, gets a new listener)."""
        await self._stop_listening()
        listener = await asyncio.to_thread(listen_in, namespace, PROXY_PORT)
        self._server = await asyncio.start_server(self._serve, sock=listener, limit=HEAD_CAP)

    async def close(self) -> None:
        await self._stop_listening()
        for writer in list(self._connections):
            writer.close()
        self._connections.clear()

    async def _stop_listening(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
            with contextlib.suppress(Exception):
                await server.wait_closed()

    def _count(self, kind: str, host: str, why: str | None = None) -> None:
        tally = self.phases.setdefault(self.phase, Tally())
        counts: dict[str, int] = getattr(tally, kind)
        counts[host] = counts.get(host, 0) + 1
        if why is not None:
            tally.why.setdefault(host, why)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._connections.add(writer)
        try:
            await self._handle(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass
        except TimeoutError:
            pass
        finally:
            self._connections.discard(writer)
            writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT)
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3:
            await _answer(writer, 400, "not an HTTP request")
            return
        method, target, version = parts
        if method == "CONNECT":
            host, _, port_text = target.rpartition(":")
            host = host.strip("[]")
            path = ""
        else:
            url = urlsplit(target)
            if url.scheme != "http" or not url.hostname:
                await _answer(writer, 400, "a proxy request names an http:// URL")
                return
            host, port_text = url.hostname, str(url.port or 80)
            path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        host = host.lower().rstrip(".")
        if not port_text.isdigit() or not host or not 0 < int(port_text) < 65536:
            await _answer(writer, 400, f"not a host and port: {target}")
            return
        port = int(port_text)
        why = self.policy.refusal(host)
        addresses: list[Address] = []
        if why is None:
            addresses, why = await self._resolve(host, port)
        if why is not None:
            self._count("refused", host, why)
            await _answer(writer, 403, f"{host}: {why}")
            return
        upstream = await self._connect(addresses, port)
        if upstream is None:
            self._count("failed", host, "cannot connect")
            await _answer(writer, 502, f"{host}:{port}: cannot connect")
            return
        self._count("allowed", host)
        up_reader, up_writer = upstream
        self._connections.add(up_writer)
        try:
            if method == "CONNECT":
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                kept = [
                    line
                    for line in lines[1:]
                    if line and line.split(":", 1)[0].strip().lower() not in HOP_HEADERS
                ]
                sent = [f"{method} {path} {version}", *kept, "Connection: close", "", ""]
                up_writer.write("\r\n".join(sent).encode("latin-1"))
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            self._connections.discard(up_writer)
            up_writer.close()

    async def _resolve(self, host: str, port: int) -> tuple[list[Address], str | None]:
        """The addresses of ``host``, or why it is refused (unresolved, or leading to an
        address that is not public and not one the user allowed)."""
        literal = _address(host)
        if literal is not None:
            found = [literal]
        else:
            loop = asyncio.get_running_loop()
            try:
                infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            except OSError as error:
                return [], f"cannot be resolved ({error})"
            found = list(dict.fromkeys(ipaddress.ip_address(info[4][0]) for info in infos))
        for address in found:
            if not address.is_global and not any(address in net for net in self.private):
                return [], (
                    f"leads to {address}, which is not a public address (a user may allow "
                    "such ranges: network_private)"
                )
        return found, None

    async def _connect(
        self, addresses: Sequence[Address], port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        for address in addresses:
            with contextlib.suppress(OSError, TimeoutError):
                return await asyncio.wait_for(
                    asyncio.open_connection(str(address), port), CONNECT_TIMEOUT
                )
        return None


def _address(text: str) -> Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


async def _answer(writer: asyncio.StreamWriter, status: int, text: str) -> None:
    reasons = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}
    body = f"palaestra proxy: {text}\n".encode()
    writer.write(
        f"HTTP/1.1 {status} {reasons[status]}\r\nContent-Type: text/plain\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    with contextlib.suppress(OSError):
        await writer.drain()


async def _pipe(source: asyncio.StreamReader, target: asyncio.StreamWriter) -> None:
    try:
        while data := await source.read(CHUNK):
            target.write(data)
            await target.drain()
        if target.can_write_eof():
            target.write_eof()
    except OSError:
        target.close()
