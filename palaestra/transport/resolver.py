"""Host names resolved once per TTL and shared by every connection opened to them.

Without it each new connection resolves its host again, in the loop's thread pool: a run
opening a thousand connections to ``api.example.com`` would queue a thousand lookups behind a
handful of threads. Concurrent lookups of one host wait for the same answer.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import socket

from palaestra.transport.dial import interleaved


@functools.lru_cache(maxsize=1024)
def is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class Resolver:
    """The addresses of a host, cached for ``ttl`` seconds; an IP address resolves to itself."""

    def __init__(self, ttl: float = 10.0) -> None:
        self._ttl = ttl
        self._known: dict[tuple[str, int], tuple[float, list[str]]] = {}
        self._pending: dict[tuple[str, int], asyncio.Future[list[str]]] = {}

    async def addresses(self, host: str, port: int) -> list[str]:
        """Raises ``OSError`` (``socket.gaierror``) when the name does not resolve."""
        if is_ip_literal(host):
            return [host]
        key = (host, port)
        loop = asyncio.get_running_loop()
        known = self._known.get(key)
        if known is not None and known[0] > loop.time():
            return known[1]
        pending = self._pending.get(key)
        if pending is None:
            pending = self._pending[key] = asyncio.ensure_future(self._lookup(host, port))
            pending.add_done_callback(lambda _: self._pending.pop(key, None))
        # A waiter cancelled (its connect timed out) must not cancel the others' lookup.
        return await asyncio.shield(pending)

    async def _lookup(self, host: str, port: int) -> list[str]:
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        addresses = interleaved(list(dict.fromkeys(str(info[4][0]) for info in infos)))
        if not addresses:
            raise socket.gaierror(f"{host} resolves to no address")
        self._known[(host, port)] = (loop.time() + self._ttl, addresses)
        return addresses
