"""Timeouts say which one passed, and an answer cannot grow past the client's cap."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from palaestra.transport import (
    AnswerTooLarge,
    ConnectFailed,
    ConnectTimeout,
    HttpClient,
    ReadTimeout,
    TransportError,
)
from tests.transport.raw_server import (
    Peer,
    Servers,
    answer,
    answer_always,
    answer_numbered,
    never_answer,
)


async def test_a_connect_that_does_not_finish_in_time_is_a_connect_timeout(
    client: HttpClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def never_connect(*args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(10)

    monkeypatch.setattr(asyncio.get_running_loop(), "create_connection", never_connect)
    with pytest.raises(ConnectTimeout, match=r"timed out \(0\.05 s\)") as raised:
        await client.request("GET", "http://127.0.0.1:9/", connect_timeout=0.05)
    # Code that catches the built-in TimeoutError or the transport's ConnectFailed still does.
    assert isinstance(raised.value, TimeoutError)
    assert isinstance(raised.value, ConnectFailed)
    assert isinstance(raised.value, TransportError)


async def test_no_whole_answer_in_time_is_a_read_timeout(
    servers: Servers, client: HttpClient
) -> None:
    server = await servers.start(never_answer)
    with pytest.raises(ReadTimeout, match=r"read timeout \(0\.05 s\)") as raised:
        await client.request("GET", server.url(), read_timeout=0.05)
    assert isinstance(raised.value, TimeoutError)
    assert isinstance(raised.value, TransportError)
    assert not isinstance(raised.value, ConnectFailed)  # the request was sent


@pytest.mark.parametrize("framing", ["content-length", "chunked", "until-close"])
async def test_an_answer_past_max_answer_bytes_is_answer_too_large_naming_the_cap(
    servers: Servers, new_client: Callable[..., HttpClient], framing: str
) -> None:
    heads = {
        "content-length": b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n",
        "chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
        "until-close": b"HTTP/1.1 200 OK\r\n\r\n",
    }
    piece = b"x" * 1000
    if framing == "chunked":
        piece = b"3e8\r\n" + piece + b"\r\n"

    async def flood(peer: Peer) -> None:
        if peer.index > 0:
            return await answer_numbered(peer)
        await peer.read_request()
        peer.send(heads[framing])
        for _ in range(100):
            peer.send(piece)
            await peer.writer.drain()
        await peer.read_request()  # until the client hangs up

    server = await servers.start(flood)
    client = new_client(max_answer_bytes=10_000)
    with pytest.raises(AnswerTooLarge, match=r"max_answer_bytes, 10,000 bytes"):
        await client.request("GET", server.url())
    await server.peers[0].wait_hung_up()
    assert (await client.request("GET", server.url())).body == b"c1r1"


async def test_an_answer_within_max_answer_bytes_arrives_whole(
    servers: Servers, new_client: Callable[..., HttpClient]
) -> None:
    whole = answer(b"y" * 900)
    server = await servers.start(answer_always(whole))
    client = new_client(max_answer_bytes=len(whole))
    for _ in range(2):  # the count starts again for each answer on a kept-alive connection
        assert (await client.request("GET", server.url())).body == b"y" * 900
    assert len(server.peers) == 1
