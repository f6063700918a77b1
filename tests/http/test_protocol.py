"""palaestra's HTTP/1.1 protocol under uvicorn, spoken to over raw sockets and a fake transport."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from palaestra.http.protocol import HttpProtocol
from palaestra.http.runner import BackgroundServer, make_server


async def _echo(request: Request) -> Response:
    body = await request.body()
    return PlainTextResponse(f"{request.method} {request.url.path} {len(body)} {body.decode()}")


async def _boom(request: Request) -> Response:
    raise RuntimeError("the app broke")


async def _stream(request: Request) -> Response:
    async def parts() -> Any:
        yield b"one,"
        yield b"two"

    return StreamingResponse(parts(), media_type="text/plain")


APP = Starlette(
    routes=[
        Route("/echo", _echo, methods=["GET", "POST", "HEAD"]),
        Route("/boom", _boom),
        Route("/stream", _stream),
    ]
)


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    with BackgroundServer(APP) as running:
        yield running


def _exchange(server: BackgroundServer, data: bytes, *, until_close: bool = True) -> bytes:
    with socket.create_connection((server.host, server.port), timeout=10) as raw:
        raw.sendall(data)
        if not until_close:
            return raw.recv(65536)
        chunks = []
        while chunk := raw.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


def test_the_servers_speak_palaestras_protocol_unless_the_app_has_websockets() -> None:
    assert make_server(APP).config.http is HttpProtocol
    assert make_server(APP, ws="auto").config.http == "httptools"


def test_pipelined_requests_are_answered_in_order_on_one_connection(
    server: BackgroundServer,
) -> None:
    answer = _exchange(
        server,
        b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
        b"GET /echo HTTP/1.1\r\nHost: x\r\n\r\n"
        b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nConnection: close\r\n\r\nz",
    )
    assert answer.count(b"HTTP/1.1 200 OK") == 3
    first, second, third = (answer.index(x) for x in (b"POST /echo 3 abc", b"GET /echo 0", b"z"))
    assert first < second < third
    assert answer.rstrip().endswith(b"POST /echo 1 z")
    assert b"connection: close" in answer


def test_a_chunked_request_body_reaches_the_app_whole(server: BackgroundServer) -> None:
    answer = _exchange(
        server,
        b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n"
        b"\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
    )
    assert answer.endswith(b"POST /echo 5 abcde")


def test_expect_100_continue_gets_the_interim_answer_before_the_body_is_sent(
    server: BackgroundServer,
) -> None:
    with socket.create_connection((server.host, server.port), timeout=10) as raw:
        raw.sendall(
            b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-continue\r\n"
            b"Connection: close\r\n\r\n"
        )
        assert raw.recv(1024) == b"HTTP/1.1 100 Continue\r\n\r\n"
        raw.sendall(b"hi")
        assert raw.recv(65536).endswith(b"POST /echo 2 hi")


def test_a_malformed_request_is_a_400_and_its_connection_closes(
    server: BackgroundServer,
) -> None:
    answer = _exchange(server, b"NOT HTTP AT ALL\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert b"connection: close" in answer


def test_an_app_that_raises_before_answering_is_a_500_and_the_server_goes_on(
    server: BackgroundServer,
) -> None:
    answer = _exchange(server, b"GET /boom HTTP/1.1\r\nHost: x\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 500 Internal Server Error\r\n")
    again = _exchange(server, b"GET /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert again.startswith(b"HTTP/1.1 200 OK\r\n")


def test_a_head_request_gets_the_length_and_no_body(server: BackgroundServer) -> None:
    answer = _exchange(server, b"HEAD /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"content-length: 13" in head  # "HEAD /echo 0 "
    assert body == b""


def test_an_answer_streamed_without_a_length_is_chunked(server: BackgroundServer) -> None:
    answer = _exchange(server, b"GET /stream HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in head
    assert body == b"4\r\none,\r\n3\r\ntwo\r\n0\r\n\r\n"


def test_an_http_1_0_request_is_answered_and_its_connection_closed(
    server: BackgroundServer,
) -> None:
    answer = _exchange(server, b"GET /echo HTTP/1.0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
    assert answer.endswith(b"GET /echo 0 ")


# --- one connection on a fake transport: what is written, and when ----------------------------


class _Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 9) if name in ("sockname", "peername") else default

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def _connection(keepalive: float = 5.0) -> tuple[HttpProtocol, _Transport]:
    config = SimpleNamespace(
        loaded=True, loaded_app=APP, root_path="", timeout_keep_alive=keepalive
    )
    state = SimpleNamespace(connections=set(), tasks=set(), default_headers=[(b"date", b"now")])
    protocol = HttpProtocol(config, state, {})
    transport = _Transport()
    protocol.connection_made(transport)
    return protocol, transport


async def _settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_an_answer_is_written_in_one_piece() -> None:
    protocol, transport = _connection()
    protocol.data_received(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")
    await _settle()
    assert len(transport.writes) == 1  # uvicorn's own protocol writes the head, then the body
    assert transport.writes[0].startswith(b"HTTP/1.1 200 OK\r\ndate: now\r\n")
    assert transport.writes[0].endswith(b"\r\n\r\nPOST /echo 2 hi")
    assert not transport.closed


async def test_an_idle_connection_closes_after_the_keepalive_timeout_and_a_busy_one_stays() -> None:
    protocol, transport = _connection(keepalive=0.05)
    protocol.data_received(b"GET /echo HTTP/1.1\r\nHost: x\r\n\r\n")
    await _settle()
    for _ in range(3):  # requests inside the timeout keep it open
        await asyncio.sleep(0.03)
        protocol.data_received(b"GET /echo HTTP/1.1\r\nHost: x\r\n\r\n")
        await _settle()
        assert not transport.closed
    await asyncio.sleep(0.12)
    assert transport.closed
    assert len(transport.writes) == 4


async def test_a_header_with_a_line_break_never_reaches_the_wire() -> None:
    async def injected(scope: Any, receive: Any, send: Any) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"x-fine", b"1"), (b"x-name", b"a\r\nset-cookie: evil=1")],
            }
        )
        await send({"type": "http.response.body", "body": b"ok"})

    protocol, transport = _connection()
    protocol.app = injected
    protocol.data_received(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    await _settle()
    assert not any(b"evil" in written for written in transport.writes)
    assert transport.closed
