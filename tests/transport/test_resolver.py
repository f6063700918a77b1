"""Resolver: one lookup per host and TTL, shared by concurrent callers; IPs skip the lookup."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest

from palaestra.transport import HttpClient
from palaestra.transport.resolver import Resolver, is_ip_literal


class CountedLookups:
    """Stands in for the running loop's getaddrinfo: counts calls, answers after ``delay``."""

    def __init__(self, answer: list[str] | None, delay: float = 0.0) -> None:
        self.answer = answer
        self.delay = delay
        self.calls: list[str] = []

    async def __call__(self, host: str, port: int, **_: Any) -> list[Any]:
        self.calls.append(host)
        await asyncio.sleep(self.delay)
        if self.answer is None:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port)) for ip in self.answer]


@pytest.fixture
async def lookups(monkeypatch: pytest.MonkeyPatch) -> CountedLookups:
    counted = CountedLookups(["10.0.0.1", "10.0.0.2", "10.0.0.1"], delay=0.02)
    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", counted)
    return counted


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "2001:db8::1"])
async def test_an_ip_address_is_its_own_answer_without_a_lookup(
    lookups: CountedLookups, host: str
) -> None:
    assert is_ip_literal(host)
    assert await Resolver().addresses(host, 80) == [host]
    assert lookups.calls == []


async def test_concurrent_and_repeated_lookups_of_a_host_share_one_answer(
    lookups: CountedLookups,
) -> None:
    resolver = Resolver(ttl=60)
    answers = await asyncio.gather(*(resolver.addresses("model.internal", 80) for _ in range(5)))
    assert answers == [["10.0.0.1", "10.0.0.2"]] * 5  # in order, each address once
    assert await resolver.addresses("model.internal", 80) == ["10.0.0.1", "10.0.0.2"]
    assert lookups.calls == ["model.internal"]
    await resolver.addresses("other.internal", 80)
    assert lookups.calls == ["model.internal", "other.internal"]


async def test_an_answer_is_looked_up_again_once_its_ttl_has_passed(
    lookups: CountedLookups,
) -> None:
    resolver = Resolver(ttl=0.05)
    await resolver.addresses("model.internal", 80)
    await asyncio.sleep(0.08)
    await resolver.addresses("model.internal", 80)
    assert lookups.calls == ["model.internal", "model.internal"]


async def test_a_failed_lookup_raises_and_is_not_remembered(lookups: CountedLookups) -> None:
    resolver = Resolver(ttl=60)
    lookups.answer = None
    with pytest.raises(OSError):
        await resolver.addresses("nowhere.internal", 80)
    lookups.answer = ["10.0.0.9"]
    assert await resolver.addresses("nowhere.internal", 80) == ["10.0.0.9"]
    assert len(lookups.calls) == 2


async def test_a_cancelled_caller_does_not_cancel_the_lookup_others_wait_for(
    lookups: CountedLookups,
) -> None:
    resolver = Resolver(ttl=60)
    impatient = asyncio.ensure_future(resolver.addresses("model.internal", 80))
    patient = asyncio.ensure_future(resolver.addresses("model.internal", 80))
    await asyncio.sleep(0)
    impatient.cancel()
    assert await patient == ["10.0.0.1", "10.0.0.2"]
    assert impatient.cancelled()
    assert lookups.calls == ["model.internal"]


async def test_the_client_resolves_a_host_name_once_for_many_connections(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loop = asyncio.get_running_loop()
    real_getaddrinfo = loop.getaddrinfo
    calls: list[str] = []

    async def counted(host: str, port: int, **kwargs: Any) -> Any:
        calls.append(host)
        return await real_getaddrinfo(host, port, **kwargs)

    monkeypatch.setattr(loop, "getaddrinfo", counted)
    release = asyncio.Event()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        await release.wait()  # hold every request, so each needs its own connection
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = HttpClient()
    try:
        requests = [
            asyncio.ensure_future(client.request("GET", f"http://localhost:{port}/"))
            for _ in range(4)
        ]
        await asyncio.sleep(0.1)
        release.set()
        assert [answer.body for answer in await asyncio.gather(*requests)] == [b"ok"] * 4
    finally:
        await client.aclose()
        server.close()
        await server.wait_closed()
    assert calls == ["localhost"]
