"""HttpClient against scripted raw servers: keep-alive, framing, failures, TLS, bounds.

Each test runs small ``asyncio.start_server`` servers on 127.0.0.1 on its own event loop. A
server's handler is called once per accepted connection with a ``Peer`` (the server's side
of that connection) and writes exactly the bytes the test wants, so the tests can count
connections and requests and see what the client sent or closed.
"""

from __future__ import annotations

import asyncio
import gc
import socket
import ssl
import struct
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from palaestra.transport import (
    ConnectFailed,
    ConnectionLost,
    FramedHeaders,
    HttpAnswer,
    HttpClient,
    InvalidUrl,
    ProtocolViolation,
    TlsFailed,
    TransportError,
)
from palaestra.transport.connection import Connection
from tests.support.network import free_port
from tests.support.scripted_model import ScriptedModelServer, text_response
from tests.transport.conftest import LoopFactory
from tests.transport.raw_server import (
    Peer,
    Server,
    Servers,
    answer,
    answer_always,
    answer_numbered,
    never_answer,
    numbered,
    parse_request,
    self_signed,
    wait_until,
)

# --- keep-alive ----------------------------------------------------------------------------


async def test_sequential_requests_to_one_origin_share_one_connection(
    servers: Servers, client: HttpClient
) -> None:
    server = await servers.start(answer_numbered)
    bodies = [(await client.request("GET", server.url())).body for _ in range(3)]
    assert bodies == [b"c0r1", b"c0r2", b"c0r3"]
    assert len(server.peers) == 1


async def test_each_origin_has_its_own_pool(servers: Servers, client: HttpClient) -> None:
    first = await servers.start(answer_numbered)
    second = await servers.start(answer_numbered)
    for server in (first, second, first, second):
        await client.request("GET", server.url())
    assert [len(peer.requests) for peer in first.peers] == [2]
    assert [len(peer.requests) for peer in second.peers] == [2]


async def test_concurrent_requests_use_separate_connections_and_are_then_reused(
    servers: Servers, client: HttpClient
) -> None:
    all_arrived = asyncio.Event()
    server: Server

    async def answer_when_all_three_arrived(peer: Peer) -> None:
        while await peer.read_request() is not None:
            if len(server.requests) == 3:
                all_arrived.set()
            await all_arrived.wait()  # one connection carrying them in turn would stall here
            peer.send(numbered(peer))

    server = await servers.start(answer_when_all_three_arrived)
    answers = await asyncio.gather(
        *(client.request("GET", server.url(), read_timeout=1.0) for _ in range(3))
    )
    assert sorted(a.body for a in answers) == [b"c0r1", b"c1r1", b"c2r1"]
    for _ in range(3):
        await client.request("GET", server.url())
    assert len(server.peers) == 3
    assert len(server.requests) == 6


async def test_the_most_recently_used_idle_connection_is_taken_first(
    servers: Servers, client: HttpClient
) -> None:
    first_answered = asyncio.Event()

    async def answer_connection_0_first(peer: Peer) -> None:
        while await peer.read_request() is not None:
            if peer.index == 1 and len(peer.requests) == 1:
                await first_answered.wait()
                await asyncio.sleep(0.02)  # the client has put connection 0 back by now
            peer.send(numbered(peer))
            first_answered.set()

    server = await servers.start(answer_connection_0_first)
    async with asyncio.timeout(1.0):
        answers = await asyncio.gather(*(client.request("GET", server.url()) for _ in range(2)))
    assert [a.body for a in answers] == [b"c0r1", b"c1r1"]
    assert (await client.request("GET", server.url())).body == b"c1r2"
    assert (await client.request("GET", server.url())).body == b"c1r3"


@pytest.mark.parametrize(
    ("first_answer", "connections"),
    [
        (answer(b"ok", "Connection: close"), 2),
        (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", 2),
        (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok", 1),
        (answer(b"ok", "Connection: keep-alive"), 1),
    ],
    ids=["1.1-close", "1.0", "1.0-keep-alive", "1.1-keep-alive"],
)
async def test_a_connection_is_reused_only_if_the_answer_allows_keep_alive(
    servers: Servers, client: HttpClient, first_answer: bytes, connections: int
) -> None:
    async def handle(peer: Peer) -> None:
        while await peer.read_request() is not None:
            peer.send(first_answer if len(server.requests) == 1 else numbered(peer))

    server = await servers.start(handle)
    first = await client.request("GET", server.url())
    second = await client.request("GET", server.url())
    assert (first.status, first.body) == (200, b"ok")
    assert len(server.peers) == connections
    assert second.body == (b"c1r1" if connections == 2 else b"c0r2")
    if connections == 2:
        await server.peers[0].wait_hung_up()  # the client closed the one it would not reuse


async def test_an_idle_connection_older_than_keepalive_is_closed_not_reused(
    servers: Servers, new_client: Callable[..., HttpClient]
) -> None:
    client = new_client(keepalive=0.2)
    server = await servers.start(answer_numbered)
    assert (await client.request("GET", server.url())).body == b"c0r1"
    assert (await client.request("GET", server.url())).body == b"c0r2"
    await asyncio.sleep(0.3)
    assert (await client.request("GET", server.url())).body == b"c1r1"
    await server.peers[0].wait_hung_up()


async def test_aclose_closes_idle_connections_and_later_requests_fail(
    servers: Servers, client: HttpClient
) -> None:
    server = await servers.start(answer_numbered)
    async with asyncio.timeout(1.0):  # two at once: two idle connections afterwards
        await asyncio.gather(*(client.request("GET", server.url()) for _ in range(2)))
    assert len(server.peers) == 2
    await client.aclose()
    assert client.closing
    for peer in server.peers:
        await peer.wait_hung_up()
    with pytest.raises(TransportError):
        await client.request("GET", server.url())
    assert len(server.peers) == 2
    assert len(server.requests) == 2


# --- what is sent and what is parsed --------------------------------------------------------


async def test_the_request_carries_method_target_host_headers_and_body(
    servers: Servers, client: HttpClient
) -> None:
    server = await servers.start(
        answer_always(answer(b"{}", "X-Request-Id: abc", "Content-Type: application/json"))
    )
    got = await client.request(
        "POST",
        server.url("/v1/chat?x=1&y=2"),
        body=b'{"a": 1}',
        headers={"Authorization": "Bearer t", "User-Agent": "tester"},
    )
    assert got == HttpAnswer(
        200,
        {"content-length": "2", "x-request-id": "abc", "content-type": "application/json"},
        b"{}",
    )
    line, headers, body = parse_request(server.requests[0])
    assert line == "POST /v1/chat?x=1&y=2 HTTP/1.1"
    assert headers["host"] == f"127.0.0.1:{server.port}"
    assert headers["authorization"] == "Bearer t"
    assert headers["user-agent"] == "tester"
    assert headers["content-length"] == "8"
    assert body == b'{"a": 1}'


async def test_the_callers_user_agent_and_accept_replace_the_defaults_in_any_case(
    servers: Servers, client: HttpClient
) -> None:
    server = await servers.start(answer_numbered)
    await client.request("GET", server.url(), headers={"user-agent": "me", "ACCEPT": "text/x"})
    _, headers, _ = parse_request(server.requests[0])  # refuses a header sent twice
    assert (headers["user-agent"], headers["accept"]) == ("me", "text/x")


async def test_headers_framed_once_go_as_given_to_every_url(
    servers: Servers, client: HttpClient
) -> None:
    server = await servers.start(answer_always(answer(b"ok", "X-Token: one", "x-token: two")))
    framed = FramedHeaders({"X-Session": "s1.abc", "accept": "application/json"})
    for path in ("/seed", "/tool", "/seed"):
        got = await client.request("POST", server.url(path), body=b"{}", headers=framed)
        assert got.header("X-TOKEN") == "two"  # the last of a repeated header, as .headers
        assert got.header("x-missing") is None
    sent = [parse_request(raw) for raw in server.requests]
    assert [line for line, _, _ in sent] == [
        "POST /seed HTTP/1.1",
        "POST /tool HTTP/1.1",
        "POST /seed HTTP/1.1",
    ]
    for _, headers, body in sent:
        assert headers["x-session"] == "s1.abc"
        assert headers["accept"] == "application/json"
        assert headers["host"] == f"127.0.0.1:{server.port}"
        assert (headers["content-length"], body) == ("2", b"{}")


@pytest.mark.parametrize(
    "headers",
    [{"X-Bad": "a\r\nX-Injected: 1"}, {"Content-Length": "3"}, {"Host": "elsewhere"}],
    ids=["line-break", "content-length", "host"],
)
def test_headers_that_would_frame_the_request_otherwise_are_refused_when_framed(
    headers: dict[str, str],
) -> None:
    with pytest.raises(ValueError):
        FramedHeaders(headers)


def test_a_header_added_to_framed_headers_frames_as_the_whole_map_would() -> None:
    base = FramedHeaders({"X-Session": "s1.abc", "Accept": "application/json"})
    added = base.adding("x-palaestra-close", "1")
    whole = FramedHeaders({"X-Session": "s1.abc", "Accept": "application/json"})
    assert sorted(added.block.split(b"\r\n")) == sorted(
        (whole.block + b"x-palaestra-close: 1\r\n").split(b"\r\n")
    )
    assert added.items == {**base.items, "x-palaestra-close": "1"}
    assert b"x-palaestra-close" not in base.block  # the base is left as it was
    for name, value in (("X-Bad", "a\r\nX-Injected: 1"), ("Host", "x"), ("user-agent", "me")):
        with pytest.raises(ValueError):
            base.adding(name, value)


@pytest.mark.parametrize("pause", [0.0, 0.05], ids=["with-the-answer", "while-idle"])
async def test_an_answer_nobody_asked_for_retires_the_connection(
    servers: Servers, client: HttpClient, pause: float
) -> None:
    async def answer_then_chatter(peer: Peer) -> None:
        while await peer.read_request() is not None:
            peer.send(numbered(peer))
            if pause:
                await asyncio.sleep(pause)
            peer.send(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstale")

    server = await servers.start(answer_then_chatter)
    assert (await client.request("GET", server.url())).body == b"c0r1"
    await asyncio.sleep(0.1)  # the unasked-for answer has arrived
    assert (await client.request("GET", server.url())).body == b"c1r1"


async def test_a_request_without_body_sends_no_content_length_except_for_post(
    servers: Servers, client: HttpClient
) -> None:
    server = await servers.start(answer_numbered)
    await client.request("GET", server.url("/a"))
    await client.request("POST", server.url("/b"))
    (get_line, get_headers, _), (post_line, post_headers, post_body) = map(
        parse_request, server.requests
    )
    assert get_line == "GET /a HTTP/1.1"
    assert "content-length" not in get_headers
    assert get_headers["user-agent"] == "palaestra"
    assert post_line == "POST /b HTTP/1.1"
    assert (post_headers["content-length"], post_body) == ("0", b"")


async def test_repeated_requests_with_other_headers_or_bodies_are_framed_afresh(
    servers: Servers, client: HttpClient
) -> None:
    server = await servers.start(answer_numbered)
    url = server.url("/v1")
    for turn, body in (("1", b"a"), ("2", b"bcd"), ("2", b"")):
        await client.request("POST", url, headers={"X-Turn": turn}, body=body)
    await client.request("POST", url, body=b"efgh")
    await client.request("GET", url, headers={"X-Turn": "3"})
    sent = [parse_request(raw) for raw in server.requests]
    assert [headers.get("x-turn") for _, headers, _ in sent] == ["1", "2", "2", None, "3"]
    assert [headers.get("content-length") for _, headers, _ in sent] == ["1", "3", "0", "4", None]
    assert [body for _, _, body in sent] == [b"a", b"bcd", b"", b"efgh", b""]
    assert [line.split()[0] for line, _, _ in sent] == ["POST"] * 4 + ["GET"]


async def test_large_bodies_arrive_whole_both_ways(servers: Servers, client: HttpClient) -> None:
    big = bytes(range(256)) * 4096  # 1 MiB

    async def echo_in_pieces(peer: Peer) -> None:
        while (request := await peer.read_request()) is not None:
            body = request.partition(b"\r\n\r\n")[2]
            peer.send(f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n\r\n".encode())
            for start in range(0, len(body), 100_000):
                peer.send(body[start : start + 100_000])
                await peer.writer.drain()

    server = await servers.start(echo_in_pieces)
    got = await client.request("PUT", server.url(), body=big)
    assert got.body == big
    assert (await client.request("PUT", server.url(), body=b"again")).body == b"again"
    assert len(server.peers) == 1


async def test_a_chunked_answer_is_decoded_and_its_end_found(
    servers: Servers, client: HttpClient
) -> None:
    pieces = [
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"4\r\nWi",
        b"ki\r\n5\r\npedia\r\n",
        b"0\r\n\r\n",
    ]

    async def handle(peer: Peer) -> None:
        while await peer.read_request() is not None:
            if len(peer.requests) > 1:
                peer.send(numbered(peer))
                continue
            for piece in pieces:  # in separate segments: the parser must resume mid-chunk
                peer.send(piece)
                await peer.writer.drain()
                await asyncio.sleep(0.01)

    server = await servers.start(handle)
    got = await client.request("GET", server.url())
    assert (got.status, got.body) == (200, b"Wikipedia")
    assert (await client.request("GET", server.url())).body == b"c0r2"
    assert len(server.peers) == 1


@pytest.mark.parametrize("version", ["HTTP/1.1", "HTTP/1.0"])
async def test_an_answer_without_length_or_chunking_ends_when_the_server_closes(
    servers: Servers, client: HttpClient, version: str
) -> None:
    async def handle(peer: Peer) -> None:
        await peer.read_request()
        if peer.index > 0:
            peer.send(numbered(peer))
            await peer.read_request()
            return
        peer.send(f"{version} 200 OK\r\nContent-Type: text/plain\r\n\r\npart one, ".encode())
        await peer.writer.drain()
        await asyncio.sleep(0.02)
        peer.send(b"part two")  # then the handler returns and the server closes

    server = await servers.start(handle)
    got = await client.request("GET", server.url())
    assert (got.status, got.body) == (200, b"part one, part two")
    assert (await client.request("GET", server.url())).body == b"c1r1"


async def test_an_answer_without_length_cut_by_a_reset_is_lost_not_complete(
    servers: Servers, client: HttpClient
) -> None:
    async def handle(peer: Peer) -> None:
        await peer.read_request()
        peer.send(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\npart one, ")
        await peer.writer.drain()
        await asyncio.sleep(0.02)
        sock = peer.writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        peer.writer.transport.abort()  # linger 0: the close is a reset

    server = await servers.start(handle)
    with pytest.raises(ConnectionLost):
        await client.request("GET", server.url())


async def test_every_value_of_a_repeated_header_is_kept_in_order(
    servers: Servers, client: HttpClient
) -> None:
    server = await servers.start(
        answer_always(answer(b"ok", "Set-Cookie: a=1; Path=/", "set-cookie: b=2", "X-One: x"))
    )
    got = await client.request("GET", server.url())
    assert got.header_values("Set-Cookie") == ["a=1; Path=/", "b=2"]
    assert got.headers["set-cookie"] == "b=2"
    assert got.header_values("x-one") == ["x"]
    assert got.header_values("x-missing") == []


async def test_header_values_lose_the_whitespace_around_them(
    servers: Servers, client: HttpClient
) -> None:
    raw = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Spaced:   padded value \r\nX-Empty:\r\n\r\nok"
    server = await servers.start(answer_always(raw))
    got = await client.request("GET", server.url())
    assert got.body == b"ok"
    assert got.headers == {"content-length": "2", "x-spaced": "padded value", "x-empty": ""}
    assert got.raw_headers[1] == (b"X-Spaced", b"padded value")


async def test_the_headers_of_an_answer_split_over_reads_are_whole(
    servers: Servers, client: HttpClient
) -> None:
    async def handle(peer: Peer) -> None:
        while await peer.read_request() is not None:
            for piece in (b"HTTP/1.1 200 OK\r\nX-A", b": one\r\nContent-Le", b"ngth: 2\r\n\r\nok"):
                peer.send(piece)
                await peer.writer.drain()
                await asyncio.sleep(0.01)

    server = await servers.start(handle)
    got = await client.request("GET", server.url())
    assert (got.body, got.headers) == (b"ok", {"x-a": "one", "content-length": "2"})


async def test_a_closed_connection_is_freed_without_the_cycle_collector(
    servers: Servers, client: HttpClient
) -> None:
    server = await servers.start(answer_always(answer(b"ok", "Connection: close")))
    gc.collect()
    gc.disable()
    try:
        for _ in range(3):
            assert (await client.request("GET", server.url())).body == b"ok"
        await asyncio.sleep(0.05)  # the closes have run
        alive = [o for o in gc.get_objects() if isinstance(o, Connection)]
    finally:
        gc.enable()
    assert alive == []


async def test_head_requests_are_refused(client: HttpClient) -> None:
    with pytest.raises(ValueError, match="HEAD"):
        await client.request("HEAD", "http://127.0.0.1:9/")


async def test_interim_1xx_answers_are_skipped(servers: Servers, client: HttpClient) -> None:
    server = await servers.start(
        answer_always(
            b"HTTP/1.1 100 Continue\r\n\r\n"
            b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>\r\n\r\n"
            + answer(b"final", "X-Final: yes")
        )
    )
    got = await client.request("POST", server.url(), body=b"x")
    assert (got.status, got.body) == (200, b"final")
    assert got.headers["x-final"] == "yes"
    assert "link" not in got.headers  # the headers are the final answer's own
    assert (await client.request("POST", server.url(), body=b"x")).body == b"final"
    assert len(server.peers) == 1


async def test_an_interim_answer_then_a_close_raises_connection_lost(
    servers: Servers, client: HttpClient
) -> None:
    async def handle(peer: Peer) -> None:
        await peer.read_request()
        peer.send(b"HTTP/1.1 100 Continue\r\n\r\n")  # and then nothing: the server closes

    server = await servers.start(handle)
    with pytest.raises(ConnectionLost):
        await client.request("POST", server.url(), body=b"x")


# --- a connection that breaks ---------------------------------------------------------------


@pytest.mark.parametrize(
    "first_answer",
    [answer(b"ok"), b"HTTP/1.1 204 No Content\r\n\r\n"],
    ids=["content-length", "no-content"],
)
async def test_a_connection_the_server_closed_while_idle_is_replaced_and_the_request_resent(
    servers: Servers, client: HttpClient, first_answer: bytes
) -> None:
    async def handle(peer: Peer) -> None:
        while await peer.read_request() is not None:
            peer.send(first_answer if len(server.requests) == 1 else numbered(peer))

    server = await servers.start(handle)
    await client.request("GET", server.url())
    # The server closes the idle connection, and the client sends its next request before it
    # has run again to notice: the request lands on the dead connection (which answers it
    # with a reset, unread), so the client must notice then and resend on a new one.
    server.peers[0].writer.close()
    got = await client.request("GET", server.url())
    assert (got.status, got.body) == (200, b"c1r1")
    assert [len(peer.requests) for peer in server.peers] == [1, 1]


async def test_a_resent_request_is_resent_only_once(servers: Servers, client: HttpClient) -> None:
    async def handle(peer: Peer) -> None:
        await peer.read_request()
        if peer.index == 0:
            peer.send(numbered(peer))
            await peer.read_request()
        # any later connection: read the request, close without answering

    server = await servers.start(handle)
    await client.request("GET", server.url())
    server.peers[0].writer.close()
    with pytest.raises(ConnectionLost):
        await client.request("GET", server.url())
    assert len(server.peers) == 2
    assert [len(peer.requests) for peer in server.peers] == [1, 1]


@pytest.mark.parametrize(
    "partial",
    [
        b"HTTP/1.1 200 OK\r\nContent-Le",
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
    ],
    ids=["in-head", "in-body", "in-chunk"],
)
async def test_a_connection_broken_mid_answer_raises_connection_lost_without_resending(
    servers: Servers, client: HttpClient, partial: bytes
) -> None:
    async def handle(peer: Peer) -> None:
        while await peer.read_request() is not None:
            if len(peer.requests) == 2:
                peer.send(partial)
                return  # the server closes after part of the second answer
            peer.send(numbered(peer))

    server = await servers.start(handle)
    assert (await client.request("GET", server.url())).body == b"c0r1"
    with pytest.raises(ConnectionLost):
        await client.request("GET", server.url())  # on the reused connection
    assert len(server.peers) == 1
    assert len(server.requests) == 2
    assert (await client.request("GET", server.url())).body == b"c1r1"


async def test_a_read_timeout_raises_and_closes_that_connection(
    servers: Servers, client: HttpClient
) -> None:
    async def handle(peer: Peer) -> None:
        await (answer_numbered(peer) if peer.index > 0 else never_answer(peer))

    server = await servers.start(handle)
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(1.0):  # a guard: this one would show in the time taken
            await client.request("GET", server.url(), read_timeout=0.1)
    assert 0.09 <= loop.time() - started < 0.5
    await server.peers[0].wait_hung_up()
    assert (await client.request("GET", server.url(), read_timeout=1.0)).body == b"c1r1"


async def test_a_later_request_with_a_shorter_read_timeout_still_times_out(
    servers: Servers, client: HttpClient
) -> None:
    # The connection's deadline timer was armed for the first request's 60 s.
    async def handle(peer: Peer) -> None:
        await peer.read_request()
        peer.send(answer(b"first"))
        await never_answer(peer)

    server = await servers.start(handle)
    assert (await client.request("GET", server.url(), read_timeout=60.0)).body == b"first"
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(2.0):  # a guard: a 60 s timer would trip this one
            await client.request("GET", server.url(), read_timeout=0.1)


async def test_a_request_is_not_timed_out_by_an_earlier_requests_shorter_deadline(
    servers: Servers, client: HttpClient
) -> None:
    async def handle(peer: Peer) -> None:
        await peer.read_request()
        peer.send(answer(b"first"))
        await peer.read_request()
        await asyncio.sleep(0.3)  # past the first request's deadline, within the second's
        peer.send(answer(b"second"))
        await never_answer(peer)

    server = await servers.start(handle)
    assert (await client.request("GET", server.url(), read_timeout=0.1)).body == b"first"
    got = await client.request("GET", server.url(), read_timeout=5.0)
    assert got.body == b"second"
    assert len(server.peers) == 1


async def test_a_cancelled_request_closes_its_connection(
    servers: Servers, client: HttpClient
) -> None:
    async def handle(peer: Peer) -> None:
        await (answer_numbered(peer) if peer.index > 0 else never_answer(peer))

    server = await servers.start(handle)
    waiting = asyncio.create_task(client.request("GET", server.url()))
    await wait_until(lambda: len(server.requests) == 1)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await server.peers[0].wait_hung_up()
    assert (await client.request("GET", server.url())).body == b"c1r1"


async def test_a_non_http_answer_raises_protocol_violation_and_closes_the_connection(
    servers: Servers, client: HttpClient
) -> None:
    async def handle(peer: Peer) -> None:
        await (answer_numbered(peer) if peer.index > 0 else answer_always(b"garbage\r\n\r\n")(peer))

    server = await servers.start(handle)
    with pytest.raises(ProtocolViolation):
        await client.request("GET", server.url())
    await server.peers[0].wait_hung_up()
    assert (await client.request("GET", server.url())).body == b"c1r1"


# --- what cannot be requested ---------------------------------------------------------------


async def test_a_refused_connection_raises_connect_failed(client: HttpClient) -> None:
    with pytest.raises(ConnectFailed):
        await client.request("GET", f"http://127.0.0.1:{free_port()}/")


async def test_a_connect_that_does_not_finish_in_time_raises_connect_failed(
    client: HttpClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def never_connect(*args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(10)

    monkeypatch.setattr(asyncio.get_running_loop(), "create_connection", never_connect)
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(ConnectFailed):
        await client.request("GET", "http://127.0.0.1:9/", connect_timeout=0.05)
    assert loop.time() - started < 0.5


@pytest.mark.parametrize(
    "url",
    [
        "ftp://x",
        "http:///nohost",
        "http://user:pw@host/",
        "http://host:99999/",
        "http://host:0/",
        "not a url",
        "http://hôst/",
    ],
)
async def test_a_url_that_cannot_be_requested_raises_invalid_url(
    client: HttpClient, url: str
) -> None:
    with pytest.raises(InvalidUrl):
        await client.request("GET", url)


@pytest.mark.parametrize(
    "headers",
    [
        {"X-Evil": "a\r\nInjected: 1"},
        {"X-Evil": "a\nInjected: 1"},
        {"X-Evil\r\nInjected": "1"},
        {"X-Bad:Name": "1"},
        {"host": "elsewhere"},
        {"Content-Length": "5"},
        {"Transfer-Encoding": "chunked"},
        {"Connection": "close"},
    ],
    ids=[
        "crlf-in-value",
        "lf-in-value",
        "crlf-in-name",
        "colon-in-name",
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
    ],
)
async def test_a_header_that_would_inject_lines_raises_value_error_and_sends_nothing(
    servers: Servers, client: HttpClient, headers: dict[str, str]
) -> None:
    server = await servers.start(answer_numbered)
    with pytest.raises(ValueError):
        await client.request("GET", server.url(), headers=headers)
    assert (await client.request("GET", server.url())).body == b"c0r1"


# --- TLS ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost: (certificate, key)."""
    return self_signed(tmp_path_factory.mktemp("tls"), "localhost", "127.0.0.1")


async def tls_server(servers: Servers, certificate: tuple[Path, Path]) -> Server:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*certificate)
    return await servers.start(answer_numbered, tls=context)


async def test_https_to_a_self_signed_server_fails_under_the_default_context(
    servers: Servers, client: HttpClient, certificate: tuple[Path, Path]
) -> None:
    server = await tls_server(servers, certificate)
    with pytest.raises(TlsFailed):
        await client.request("GET", server.url(scheme="https"))
    assert server.requests == []


async def test_https_succeeds_with_a_context_that_trusts_the_certificate(
    servers: Servers, new_client: Callable[..., HttpClient], certificate: tuple[Path, Path]
) -> None:
    server = await tls_server(servers, certificate)
    client = new_client(tls=ssl.create_default_context(cafile=certificate[0]))
    for url in (server.url(scheme="https"), f"https://localhost:{server.port}/"):
        got = await client.request("GET", url)
        assert got.status == 200
    assert (await client.request("GET", server.url(scheme="https"))).body == b"c0r2"
    _, headers, _ = parse_request(server.requests[0])
    assert headers["host"] == f"127.0.0.1:{server.port}"


# --- bounded connecting ---------------------------------------------------------------------


async def test_at_most_max_connecting_connections_are_opened_at_once(
    servers: Servers, new_client: Callable[..., HttpClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    loop = asyncio.get_running_loop()
    real_create_connection = loop.create_connection
    connecting = peak = 0

    async def counted_create_connection(*args: Any, **kwargs: Any) -> Any:
        nonlocal connecting, peak
        connecting += 1
        peak = max(peak, connecting)
        try:
            await asyncio.sleep(0.01)  # a slow connect, so that unbounded ones would overlap
            return await real_create_connection(*args, **kwargs)
        finally:
            connecting -= 1

    monkeypatch.setattr(loop, "create_connection", counted_create_connection)
    client = new_client(max_connecting=3)
    server = await servers.start(answer_numbered)
    async with asyncio.timeout(1.0):
        answers = await asyncio.gather(*(client.request("GET", server.url()) for _ in range(20)))
    assert [a.status for a in answers] == [200] * 20
    assert len(server.peers) == 20  # each opened its own: none was idle when they started
    assert peak == 3


@pytest.mark.parametrize("when", ["while-waiting", "at-handover"])
async def test_a_request_cancelled_while_waiting_to_connect_passes_its_turn_on(
    servers: Servers,
    new_client: Callable[..., HttpClient],
    monkeypatch: pytest.MonkeyPatch,
    when: str,
) -> None:
    loop = asyncio.get_running_loop()
    real_create_connection = loop.create_connection
    connecting = peak = 0
    tasks: list[asyncio.Task[HttpAnswer]] = []

    async def counted_create_connection(*args: Any, **kwargs: Any) -> Any:
        nonlocal connecting, peak
        connecting += 1
        peak = max(peak, connecting)
        try:
            await asyncio.sleep(0.02)
            made = await real_create_connection(*args, **kwargs)
            if when == "at-handover" and len(tasks) == 3 and not tasks[1].done():
                # Runs before the second request wakes up with the turn this one passes it.
                loop.call_soon(tasks[1].cancel)
            return made
        finally:
            connecting -= 1

    monkeypatch.setattr(loop, "create_connection", counted_create_connection)
    client = new_client(max_connecting=1)
    server = await servers.start(answer_numbered)
    tasks.extend(asyncio.create_task(client.request("GET", server.url())) for _ in range(3))
    if when == "while-waiting":
        await wait_until(lambda: connecting == 1)
        tasks[1].cancel()
    async with asyncio.timeout(1.0):
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
    assert isinstance(outcomes[1], asyncio.CancelledError)
    assert [a.body for a in (outcomes[0], outcomes[2]) if isinstance(a, HttpAnswer)] == [
        b"c0r1",
        b"c1r1",
    ]
    other = await servers.start(answer_numbered)  # the turn is still there, and only one
    async with asyncio.timeout(1.0):
        await asyncio.gather(*(client.request("GET", other.url()) for _ in range(3)))
    assert len(other.peers) == 3
    assert peak == 1


def test_a_client_used_under_a_second_asyncio_run_opens_fresh_connections(
    loop_factory: LoopFactory,
) -> None:
    def run(step: Coroutine[Any, Any, Any]) -> Any:
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            return runner.run(step)

    with ScriptedModelServer(lambda _: text_response("ok")) as scripted:
        client = HttpClient()
        url = scripted.url + "/models"
        first = run(client.request("GET", url))  # leaves a connection in the pool
        second = run(client.request("GET", url))  # whose loop is closed by now
        run(client.aclose())
    assert first.status == second.status == 200


def test_one_header_is_found_in_the_head_as_the_whole_header_map_would_give_it() -> None:
    heads = [
        b"HTTP/1.1 200 OK\r\nX-Token:   padded \t\r\ncontent-length: 2\r\n\r\nx-token: body",
        b"HTTP/1.1 200 OK\r\nx-token: one\r\nX-TOKEN: two\r\n\r\n",
        b"HTTP/1.1 100 Continue\r\nx-token: interim\r\n\r\nHTTP/1.1 200 OK\r\nx-other: 1\r\n\r\n",
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nx-token: final\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nx-tokens: near miss\r\n\r\n",
    ]
    for head in heads:
        found = HttpAnswer.parsed(200, head, b"").header("X-Token")
        whole = HttpAnswer.parsed(200, head, b"").headers.get("x-token")
        assert found == whole, head
    assert [HttpAnswer.parsed(200, h, b"").header("x-token") for h in heads] == [
        "padded",
        "two",
        None,  # an interim answer's header is not the answer's
        "final",
        None,
    ]
