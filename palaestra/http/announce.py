"""Serving with a ready announcement: bind first, then say where, so ``--port 0`` works.

A supervisor (``palaestra run``) starts servers on port 0 and reads the one line
``PALAESTRA_READY {"url": ...}`` each prints once it accepts connections: no port races, no
guessing, no polling of ports that may belong to someone else.
"""

from __future__ import annotations

import asyncio
import errno
import os
import socket
import stat
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import orjson
import uvicorn

from palaestra.errors import ConfigError
from palaestra.http.runner import LISTEN_BACKLOG, make_server

READY_PREFIX = "PALAESTRA_READY "


def ready_line(url: str, **facts: Any) -> str:
    return READY_PREFIX + orjson.dumps({"url": url, **facts}).decode()


def parse_ready_line(line: str) -> dict[str, Any] | None:
    if not line.startswith(READY_PREFIX):
        return None
    try:
        facts = orjson.loads(line[len(READY_PREFIX) :])
    except orjson.JSONDecodeError:
        return None
    return facts if isinstance(facts, dict) and "url" in facts else None


async def serve_announced(
    app: Any,
    *,
    host: str,
    port: int,
    on_ready: Callable[[str], None],
    stop: asyncio.Event | None = None,
    ws: str = "none",
    unix_socket: Path | None = None,
) -> None:
    """Serve ``app`` until stopped; call ``on_ready(url)`` once it accepts connections.

    Setting ``stop`` shuts the server down gracefully, as a signal would. An address that
    cannot be bound (a busy port, an unknown host) is a one-line ``ConfigError`` naming it.
    ``unix_socket``: the same app on a Unix socket too (removed when the server stops, by a
    signal too; a leftover socket no server answers on is replaced, see ``listen_unix``).
    """
    display_host = f"[{host}]" if ":" in host else host
    sock = listen(host, port)
    sockets = [sock]
    if unix_socket is not None:
        try:
            sockets.append(listen_unix(unix_socket))
        except BaseException:
            sock.close()
            raise
    bound = sock.getsockname()[1]
    server = make_server(app, host=host, port=bound, ws=ws)
    if unix_socket is not None:
        _unlink_on_signal(server, unix_socket)

    async def announce() -> None:
        while not server.started:
            await asyncio.sleep(0.005)
        on_ready(f"http://{display_host}:{bound}")
        if stop is not None:
            await stop.wait()
            server.should_exit = True

    watcher = asyncio.create_task(announce())
    try:
        await server.serve(sockets=sockets)
    finally:
        watcher.cancel()
        for each in sockets:
            each.close()
        if unix_socket is not None:
            unix_socket.unlink(missing_ok=True)


def _unlink_on_signal(server: uvicorn.Server, path: Path) -> None:
    """Remove ``path`` when a signal stops ``server``: uvicorn raises the signal again once shut
    down, and SIGTERM's default action then ends the process before any ``finally`` runs."""
    handle_exit = server.handle_exit

    def handle(sig: int, frame: FrameType | None) -> None:
        path.unlink(missing_ok=True)  # new connections have nowhere to go: it is stopping
        handle_exit(sig, frame)

    server.handle_exit = handle  # type: ignore[method-assign]  # read when serving starts


def listen_unix(path: Path) -> socket.socket:
    """A listening Unix socket at ``path`` (its directory decides who may connect).

    A socket file already there that no server answers on (a killed server's) is replaced; one
    a server answers on, or a file that is not a socket, is a ``ConfigError`` naming the path.
    """
    _clear_stale_socket(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(path))
        sock.listen(LISTEN_BACKLOG)
    except OSError as error:
        sock.close()
        raise ConfigError(f"cannot listen on {path}: {error.strerror or error}") from None
    return sock


def _clear_stale_socket(path: Path) -> None:
    """Remove a socket file at ``path`` that refuses connections; refuse anything else there."""
    try:
        mode = path.lstat().st_mode
    except OSError:
        return  # nothing there (or not reachable): binding says what is wrong
    if not stat.S_ISSOCK(mode):
        raise ConfigError(
            f"cannot listen on {path}: it exists and is not a socket (remove it or pick "
            "another path)"
        )
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        try:
            probe.connect(str(path))
        except (ConnectionRefusedError, FileNotFoundError):
            try:  # nobody listens: a leftover of a killed server
                path.unlink(missing_ok=True)
            except OSError as error:
                raise ConfigError(
                    f"cannot listen on {path}: cannot remove the stale socket there "
                    f"({error.strerror or error})"
                ) from None
            return
        except (TimeoutError, BlockingIOError):
            pass  # a server too busy to accept: it is listening
        except OSError as error:
            raise ConfigError(f"cannot listen on {path}: {error.strerror or error}") from None
    raise ConfigError(
        f"cannot listen on {path}: a server is listening there (stop it or pick another path)"
    )


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``; a ``ConfigError`` naming the address if it fails."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family)
    except OSError as error:
        shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        if error.errno is not None and error.errno < 0:  # getaddrinfo's codes are negative
            reason = "the host name cannot be resolved"
        else:
            reason = os.strerror(error.errno).lower() if error.errno else str(error)
        if error.errno == errno.EADDRINUSE:
            reason += " (another process holds the port: pick another, or 0 for a free one)"
        raise ConfigError(f"cannot listen on {shown}: {reason}") from None
