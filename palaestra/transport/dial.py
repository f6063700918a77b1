"""Opening a connection: the host's addresses raced with a head start, and proxy tunnels.

A host with several addresses (``localhost`` as ``::1`` and ``127.0.0.1``, a dual-stack API)
is tried as Happy Eyeballs does (RFC 8305): the first address at once, the next when the first
has failed or has had ``HEAD_START`` seconds without answering, and so on; the first to connect
wins and the others are dropped. An address whose SYNs vanish (an IPv6 route that goes
nowhere) then costs a quarter of a second, not the whole connect timeout. A host with one
address (an IP literal, most model servers) is connected to directly, with no task.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from palaestra.transport.errors import ConnectFailed

HEAD_START = 0.25
"""Seconds an address is tried alone before the next joins in (RFC 8305's recommendation)."""

T = TypeVar("T")


async def first_to_connect(
    addresses: list[str], connect: Callable[[str], Awaitable[T]], head_start: float = HEAD_START
) -> T:
    """``connect(address)`` for the addresses in turn, each started once the one before has
    failed or had ``head_start`` seconds; the first success. Raises the last failure."""
    if len(addresses) == 1:
        return await connect(addresses[0])
    attempts: list[asyncio.Future[T]] = []
    failure: BaseException | None = None
    winner: asyncio.Future[T] | None = None
    try:
        for index, address in enumerate(addresses):
            attempts.append(asyncio.ensure_future(connect(address)))
            last = index == len(addresses) - 1
            while running := [a for a in attempts if not a.done()]:
                done, _ = await asyncio.wait(
                    running, timeout=None if last else head_start, return_when="FIRST_COMPLETED"
                )
                for attempt in done:
                    if attempt.exception() is None:
                        winner = attempt
                        return attempt.result()
                    failure = attempt.exception()
                if not last:
                    break  # a failure, or the head start is over: the next address joins
        assert failure is not None
        raise failure
    finally:
        for attempt in attempts:
            if attempt is not winner:
                attempt.add_done_callback(_drop_connected)
                attempt.cancel()


def _drop_connected(attempt: asyncio.Future[Any]) -> None:
    """A losing attempt: a connection it made anyway is closed, its error is not logged."""
    if attempt.cancelled() or attempt.exception() is not None:
        return
    made = attempt.result()
    transport = made[0] if isinstance(made, tuple) else None
    if isinstance(transport, asyncio.BaseTransport):
        transport.close()


def interleaved(addresses: list[str]) -> list[str]:
    """The resolver's order (RFC 6724's preference), alternating address families from the
    first one's, so a family that does not work is not tried over and over in a row."""
    first = [a for a in addresses if (":" in a) == (":" in addresses[0])]
    other = [a for a in addresses if (":" in a) != (":" in addresses[0])]
    mixed: list[str] = []
    for index in range(max(len(first), len(other))):
        mixed.extend(family[index] for family in (first, other) if index < len(family))
    return mixed


class Tunnel(asyncio.Protocol):
    """The proxy connection while it sets up a CONNECT tunnel; TLS then starts inside it."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._buffer = b""
        self._answer: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

    async def open(self, authority: str, authorization: str | None, proxy: str) -> None:
        """Ask for a tunnel to ``authority`` (``host:port``); raises ``ConnectFailed`` unless
        the proxy answers 2xx."""
        lines = [f"CONNECT {authority} HTTP/1.1", f"Host: {authority}"]
        if authorization is not None:
            lines.append(f"Proxy-Authorization: {authorization}")
        assert self.transport is not None
        self.transport.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        head = await self._answer
        status_line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = status_line.split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
            raise ConnectFailed(f"proxy {proxy} answered CONNECT with {status_line!r}")
        status = int(parts[1])
        if not 200 <= status < 300:
            hint = (
                " (it wants credentials: put user:password@ in the proxy URL)"
                if status == 407
                else ""
            )
            raise ConnectFailed(
                f"proxy {proxy} refused the tunnel to {authority}: {status_line[9:]}{hint}"
            )

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is no subclass

    def data_received(self, data: bytes) -> None:
        if self._answer.done():
            return  # bytes after the proxy's answer: start_tls takes over before any arrive
        self._buffer += data
        end = self._buffer.find(b"\r\n\r\n")
        if end >= 0:
            self._answer.set_result(self._buffer[:end])
        elif len(self._buffer) > 65536:
            self._answer.set_exception(ConnectFailed("the proxy's CONNECT answer has no end"))

    def connection_lost(self, exc: Exception | None) -> None:
        if not self._answer.done():
            detail = f": {exc}" if exc else ""
            self._answer.set_exception(
                ConnectFailed(f"the proxy closed the connection before answering CONNECT{detail}")
            )
