"""A host with several addresses: one that never answers must not eat the connect budget."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator

import pytest

from palaestra.transport import HttpClient, Proxies
from palaestra.transport.dial import interleaved
from tests.transport.raw_server import FixedResolver, Servers, answer_numbered


@contextlib.contextmanager
def blackhole(address: str) -> Iterator[int]:
    """A port on ``address`` whose connects hang, as a route that drops SYNs does: a listener
    whose accept queue is full (the kernel then drops new SYNs; nothing leaves loopback)."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    listener = socket.socket(family)
    fillers: list[socket.socket] = []
    try:
        listener.bind((address, 0))
        listener.listen(0)
        port: int = listener.getsockname()[1]
        for _ in range(4):
            filler = socket.socket(family)
            filler.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                filler.connect((address, port))
            fillers.append(filler)
        yield port
    finally:
        for filler in fillers:
            filler.close()
        listener.close()


@pytest.mark.parametrize("dead", ["::1", "127.0.0.2"], ids=["ipv6", "ipv4"])
async def test_an_address_that_never_answers_is_passed_over_within_the_connect_timeout(
    servers: Servers, dead: str
) -> None:
    with blackhole(dead) as port:
        server = await servers.start(answer_numbered, port=port)  # the same port, 127.0.0.1
        client = HttpClient(proxies=Proxies())
        client.resolver = FixedResolver([dead, "127.0.0.1"])
        try:
            got = await client.request("GET", f"http://dual.test:{port}/", connect_timeout=2.0)
        finally:
            await client.aclose()
    assert got.body == b"c0r1"
    assert len(server.peers) == 1


async def test_an_address_that_refuses_is_passed_over_at_once(servers: Servers) -> None:
    server = await servers.start(answer_numbered)
    client = HttpClient(proxies=Proxies())
    client.resolver = FixedResolver(["::1", "127.0.0.1"])  # nothing listens on ::1 there
    try:
        got = await client.request("GET", f"http://dual.test:{server.port}/")
    finally:
        await client.aclose()
    assert got.body == b"c0r1"


def test_addresses_alternate_families_starting_with_the_resolvers_first() -> None:
    answer = ["2001:db8::1", "2001:db8::2", "2001:db8::3", "192.0.2.1", "192.0.2.2"]
    assert interleaved(answer) == [
        "2001:db8::1",
        "192.0.2.1",
        "2001:db8::2",
        "192.0.2.2",
        "2001:db8::3",
    ]
    assert interleaved(["192.0.2.1", "2001:db8::1"]) == ["192.0.2.1", "2001:db8::1"]
    assert interleaved(["192.0.2.1"]) == ["192.0.2.1"]
