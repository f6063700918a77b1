"""A real HTTP forward proxy on 127.0.0.1 for the transport's proxy tests.

It does what a corporate proxy does, on loopback only: ``CONNECT host:port`` opens a tunnel
(then bytes flow both ways untouched, TLS included), and an absolute-form request
(``GET http://host:port/path``) is forwarded in origin form on a connection of its own to the
host. Host names are looked up in ``routes`` (``"model.test:443" -> 127.0.0.1 port``), never in
DNS, so a test can name hosts that only the proxy can reach. With ``credentials`` set it
answers 407 to a request without the matching ``Proxy-Authorization``. ``seen`` keeps each
request line and headers it received from clients.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from typing import Any


class ForwardProxy:
    def __init__(self, routes: dict[str, int], credentials: str | None = None) -> None:
        self.routes = routes
        self.credentials = credentials
        self.seen: list[tuple[str, dict[str, str]]] = []
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> ForwardProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._handle(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            writer.close()
            self._tasks.discard(task)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        line, *header_lines = head.decode("latin-1").rstrip("\r\n").split("\r\n")
        headers = {
            name.strip().lower(): value.strip()
            for name, _, value in (h.partition(":") for h in header_lines)
        }
        self.seen.append((line, headers))
        if self.credentials is not None:
            expected = "Basic " + base64.b64encode(self.credentials.encode()).decode()
            if headers.get("proxy-authorization") != expected:
                writer.write(
                    b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                    b'Proxy-Authenticate: Basic realm="test"\r\nContent-Length: 0\r\n\r\n'
                )
                await writer.drain()
                return
        method, target, _ = line.split(" ", 2)
        if method == "CONNECT":
            upstream = await self._open(target)
            if upstream is None:
                writer.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
                return
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await self._pipe(reader, writer, *upstream)
            return
        scheme, _, rest = target.partition("://")
        authority, slash, path = rest.partition("/")
        upstream = await self._open(authority) if scheme == "http" else None
        if upstream is None:
            writer.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        forwarded = [f"{method} {slash}{path} HTTP/1.1"] + [
            h for h in header_lines if not h.lower().startswith("proxy-authorization:")
        ]
        upstream[1].write(("\r\n".join(forwarded) + "\r\n\r\n").encode("latin-1"))
        # Whatever follows (the body, later requests on this connection) goes to the same host
        # unchanged (the client keeps a pool per origin, and servers accept absolute form).
        await self._pipe(reader, writer, *upstream)

    async def _open(
        self, authority: str
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        port = self.routes.get(authority.lower())
        if port is None:
            return None
        return await asyncio.open_connection("127.0.0.1", port)

    async def _pipe(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        up_reader: asyncio.StreamReader,
        up_writer: asyncio.StreamWriter,
    ) -> None:
        async def copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError):
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            sink.close()

        try:
            await asyncio.gather(copy(reader, up_writer), copy(up_reader, writer))
        finally:
            up_writer.close()
