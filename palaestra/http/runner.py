"""Run an ASGI app under uvicorn: uvloop and httptools when installed, quiet logs.

With httptools, connections speak palaestra's own HTTP/1.1 protocol (``http_server``: each
answer one write, a third of the CPU of uvicorn's) unless the app has WebSocket routes.

``serve_app`` blocks until the server is stopped (Ctrl-C). ``BackgroundServer`` runs one in a
thread on a socket bound up front, so a caller (a test, a benchmark, a stack launcher) knows
the port before the first request and can stop the server cleanly.
"""

from __future__ import annotations

import importlib.util
import socket
import threading
import time
from types import TracebackType
from typing import Any, TypeVar

import uvicorn

from palaestra._util.loop import run_on_fast_loop

_T = TypeVar("_T")

WS_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""The largest WebSocket message a server takes; a bigger one closes the socket with 1009."""
LISTEN_BACKLOG = 8192
"""Connections waiting to be accepted (uvicorn's default: 2048; Linux caps it at
``net.core.somaxconn``, 4096 by default). Thousands of sessions starting at once each open a
connection; one dropped from a full backlog waits a 1 s SYN retransmit."""


def _fastest(preferred: str, fallback: str) -> str:
    return preferred if importlib.util.find_spec(preferred) is not None else fallback


def make_server(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    log_level: str = "warning",
    ws: str = "none",
) -> uvicorn.Server:
    """A uvicorn server for ``app``; uvloop and httptools when installed, else asyncio and h11.

    ``ws``: uvicorn's WebSocket protocol; ``"none"`` (no WebSocket routes) unless the app has
    some (the OpenEnv server: ``"auto"``, uvicorn's protocol on websockets with the clean close
    of ``palaestra.http.websocket``), which keeps uvicorn's own HTTP protocol too.
    Forwarded headers are not trusted (``proxy_headers``): no palaestra route reads the
    client's address, and the rewrite costs every request.
    """
    http: Any = _fastest("httptools", "h11")
    if http == "httptools" and ws == "none":
        from palaestra.http.protocol import HttpProtocol

        http = HttpProtocol
    websocket: Any = ws
    if ws == "auto" and importlib.util.find_spec("websockets") is not None:
        from palaestra.http.websocket import WebSocketProtocol

        websocket = WebSocketProtocol  # uvicorn's own, closing a failed connection cleanly
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        loop=_fastest("uvloop", "asyncio"),
        http=http,
        ws=websocket,
        ws_max_size=WS_MAX_MESSAGE_BYTES,
        log_level=log_level,
        access_log=False,
        proxy_headers=False,
        backlog=LISTEN_BACKLOG,
        server_header=False,  # one header fewer for every client to parse; Date stays
    )
    return uvicorn.Server(config)


async def serve_app_async(
    app: Any, *, host: str = "127.0.0.1", port: int = 8000, log_level: str = "warning"
) -> None:
    """Serve ``app`` on the running loop until interrupted (for callers with their own setup)."""
    await make_server(app, host=host, port=port, log_level=log_level).serve()


def serve_app(
    app: Any, *, host: str = "127.0.0.1", port: int = 8000, log_level: str = "warning"
) -> None:
    """Serve ``app`` until interrupted."""
    run_on_fast_loop(serve_app_async(app, host=host, port=port, log_level=log_level))


class BackgroundServer:
    """``app`` served from a daemon thread; ``port=0`` picks a free port. A context manager."""

    def __init__(
        self,
        app: Any,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        log_level: str = "warning",
        ws: str = "none",
    ) -> None:
        self._socket = socket.create_server((host, port))
        self.host = host
        self.port: int = self._socket.getsockname()[1]
        self._server = make_server(app, host=host, port=self.port, log_level=log_level, ws=ws)
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [self._socket]},
            name=f"palaestra-serve-{self.port}",
            daemon=True,
        )

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout: float = 10.0) -> BackgroundServer:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"server on {self.url} did not start")
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout)
        self._socket.close()

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
