"""Scripted raw HTTP servers on 127.0.0.1 (or a Unix socket) for the transport tests.

A server's handler is called once per accepted connection with a ``Peer`` (the server's side
of that connection) and writes exactly the bytes the test wants, so the tests can count
connections and requests and see what the client sent or closed.
"""

from __future__ import annotations

import asyncio
import ssl
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from palaestra.transport import unix_url
from palaestra.transport.resolver import Resolver

Handler = Callable[["Peer"], Awaitable[None]]


class Peer:
    """The server's side of one accepted connection (``index`` counts from 0 per server)."""

    def __init__(
        self, index: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.index = index
        self.reader = reader
        self.writer = writer
        self.requests: list[bytes] = []
        self.hung_up = asyncio.Event()  # set once a read found the client's end closed

    async def read_request(self) -> bytes | None:
        """The next whole request (head and Content-Length body), or None at end of stream."""
        try:
            head = await self.reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            body = await self.reader.readexactly(length)
        except (asyncio.IncompleteReadError, ConnectionError):
            self.hung_up.set()
            return None
        self.requests.append(head + body)
        return head + body

    async def wait_hung_up(self) -> None:
        await asyncio.wait_for(self.hung_up.wait(), 1.0)

    def send(self, data: bytes) -> None:
        self.writer.write(data)


class Server:
    """A raw HTTP server calling ``handler`` for each connection; closes it when that returns."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.peers: list[Peer] = []
        self.errors: list[BaseException] = []
        self.port = 0
        self.socket_path: Path | None = None
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    async def start(
        self, tls: ssl.SSLContext | None = None, port: int = 0, unix: Path | None = None
    ) -> None:
        if unix is not None:  # a Unix socket in place of a port
            self._server = await asyncio.start_unix_server(self._accept, str(unix))
            self.socket_path = unix
            return
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", port, ssl=tls)
        self.port = self._server.sockets[0].getsockname()[1]

    def url(self, path: str = "/", scheme: str = "http") -> str:
        if self.socket_path is not None:
            return unix_url(str(self.socket_path)) + path
        return f"{scheme}://127.0.0.1:{self.port}{path}"

    @property
    def requests(self) -> list[bytes]:
        return [request for peer in self.peers for request in peer.requests]

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        peer = Peer(len(self.peers), reader, writer)
        self.peers.append(peer)
        try:
            await self.handler(peer)
        except (ConnectionError, asyncio.CancelledError):
            pass
        except Exception as exc:  # a broken handler must fail the test, not vanish in a log
            self.errors.append(exc)
        finally:
            writer.close()
            self._tasks.discard(task)

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()


class Servers:
    """Starts servers for one test and stops them all after it."""

    def __init__(self) -> None:
        self.started: list[Server] = []

    async def start(
        self,
        handler: Handler,
        tls: ssl.SSLContext | None = None,
        port: int = 0,
        unix: Path | None = None,
    ) -> Server:
        server = Server(handler)
        await server.start(tls, port, unix)
        self.started.append(server)
        return server


# --- answers and handlers ------------------------------------------------------------------


def answer(body: bytes = b"ok", *headers: str, status: str = "200 OK") -> bytes:
    """A whole HTTP/1.1 answer with a Content-Length."""
    head = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}", *headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def numbered(peer: Peer) -> bytes:
    """An answer saying which connection and which request on it: ``c0r1`` is the first."""
    return answer(f"c{peer.index}r{len(peer.requests)}".encode())


async def answer_numbered(peer: Peer) -> None:
    """Answers every request with ``numbered`` until the client closes the connection."""
    while await peer.read_request() is not None:
        peer.send(numbered(peer))


def answer_always(data: bytes) -> Handler:
    async def handle(peer: Peer) -> None:
        while await peer.read_request() is not None:
            peer.send(data)

    return handle


async def never_answer(peer: Peer) -> None:
    """Reads requests and answers none; notices when the client hangs up."""
    while await peer.read_request() is not None:
        pass


async def wait_until(condition: Callable[[], bool]) -> None:
    async with asyncio.timeout(1.0):
        while not condition():
            await asyncio.sleep(0.005)


def parse_request(raw: bytes) -> tuple[str, dict[str, str], bytes]:
    """(request line, headers with lower-case names, body) of a request the server read."""
    head, _, body = raw.partition(b"\r\n\r\n")
    line, *header_lines = head.decode("latin-1").split("\r\n")
    names = [header.partition(":")[0].lower() for header in header_lines]
    assert len(names) == len(set(names)), f"a header was sent twice: {names}"
    headers = {
        name.lower(): value.strip()
        for name, _, value in (header.partition(":") for header in header_lines)
    }
    return line, headers, body


def self_signed(where: Path, *names: str) -> tuple[Path, Path]:
    """A self-signed certificate for ``names`` (DNS names or IP addresses): (certificate, key)."""
    alt = ",".join(f"IP:{n}" if n[0].isdigit() else f"DNS:{n}" for n in names)
    command = (
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1"
        f" -keyout k.pem -out c.pem -subj /CN={names[0]} -addext subjectAltName={alt}"
    )
    subprocess.run(command.split(), cwd=where, check=True, capture_output=True)
    return where / "c.pem", where / "k.pem"


class FixedResolver(Resolver):
    """Answers one list of addresses for every host name, as a DNS answer would."""

    def __init__(self, answer: list[str]) -> None:
        super().__init__()
        self.answer = answer

    async def addresses(self, host: str, port: int) -> list[str]:
        return self.answer
