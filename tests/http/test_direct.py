"""Hot routes called directly by palaestra's HTTP protocol (whole body in, answer out).

The protocol asks the app (through the ``Guard``) for a direct route; requests the guard
would refuse, or whose body it must bound as it is read, go through ASGI as before.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from palaestra.http.guard import BodyTooLarge, Guard
from palaestra.http.json import HotRoutedApp, JSONResponse, RequestError
from palaestra.http.protocol import HttpProtocol
from palaestra.http.runner import BackgroundServer


async def _echo(request: Request) -> Response:
    body = await request.body()
    return PlainTextResponse(f"{request.url.path} {len(body)} {body[:20].decode()}")


async def _slow(request: Request) -> Response:
    await asyncio.sleep(0.01)  # suspends: the answer comes from a later turn of the loop
    return PlainTextResponse(f"slow {(await request.body()).decode()}")


async def _refused(request: Request) -> Response:
    raise RequestError(422, "no good", param="city")


async def _broken(request: Request) -> Response:
    raise RuntimeError("the handler broke")


async def _on_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestError)
    return JSONResponse({"error": exc.message, "param": exc.param}, status_code=exc.status)


async def _too_large(request: Request, exc: Exception) -> Response:
    return PlainTextResponse(str(exc), status_code=413)


class CountingApp(HotRoutedApp):
    """Counts the requests that reach the app through ASGI."""

    asgi_calls = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            CountingApp.asgi_calls += 1
        await super().__call__(scope, receive, send)


def _app() -> CountingApp:
    hot = {"/echo": _echo, "/slow": _slow, "/refused": _refused, "/broken": _broken}
    handlers = {RequestError: _on_error, BodyTooLarge: _too_large}
    return CountingApp(hot=hot, exception_handlers=handlers)


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    with BackgroundServer(Guard(_app(), token="secret", max_body=1000)) as running:
        yield running


def _exchange(server: BackgroundServer, *requests: bytes) -> bytes:
    with socket.create_connection((server.host, server.port), timeout=10) as raw:
        for request in requests:
            raw.sendall(request)
        chunks = []
        while chunk := raw.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


def _post(
    path: str, body: bytes, *headers: bytes, token: bytes = b"secret", last: bool = True
) -> bytes:
    lines = [b"POST " + path.encode() + b" HTTP/1.1", b"Host: x", *headers]
    if last:  # the server closes the connection after answering it
        lines.append(b"Connection: close")
    if token:
        lines.append(b"Authorization: Bearer " + token)
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def _length(body: bytes) -> bytes:
    return b"Content-Length: %d" % len(body)


def test_a_hot_route_is_answered_without_the_asgi_call(server: BackgroundServer) -> None:
    before = CountingApp.asgi_calls
    answer = _exchange(server, _post("/echo", b"hello", _length(b"hello")))
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
    assert answer.endswith(b"\r\n\r\n/echo 5 hello")
    assert CountingApp.asgi_calls == before


def test_a_direct_handler_that_suspends_still_answers_in_order(server: BackgroundServer) -> None:
    answer = _exchange(
        server,
        _post("/slow", b"one", _length(b"one"), last=False),
        _post("/echo", b"two", _length(b"two"), last=False),
        _post("/slow", b"three", _length(b"three")),
    )
    assert answer.count(b"HTTP/1.1 200 OK") == 3
    first, second, third = (answer.index(x) for x in (b"slow one", b"/echo 3 two", b"slow three"))
    assert first < second < third


def test_a_body_arriving_in_pieces_reaches_a_direct_handler_whole(
    server: BackgroundServer,
) -> None:
    body = b"x" * 900
    with socket.create_connection((server.host, server.port), timeout=10) as raw:
        raw.sendall(_post("/echo", b"", _length(body)))
        for start in range(0, len(body), 300):
            raw.sendall(body[start : start + 300])
        answer = b"".join(iter(lambda: raw.recv(65536), b""))
    assert answer.endswith(b"/echo 900 " + b"x" * 20)


def test_expect_100_continue_on_a_direct_route_gets_the_interim_answer_first(
    server: BackgroundServer,
) -> None:
    with socket.create_connection((server.host, server.port), timeout=10) as raw:
        raw.sendall(_post("/echo", b"", _length(b"late"), b"Expect: 100-continue"))
        assert raw.recv(65536) == b"HTTP/1.1 100 Continue\r\n\r\n"  # before any body
        raw.sendall(b"late")
        answer = b"".join(iter(lambda: raw.recv(65536), b""))
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
    assert answer.endswith(b"/echo 4 late")


def test_a_direct_handlers_request_error_goes_to_the_apps_exception_handler(
    server: BackgroundServer,
) -> None:
    answer = _exchange(server, _post("/refused", b"{}", _length(b"{}")))
    assert answer.startswith(b"HTTP/1.1 422 ")
    assert answer.endswith(b'{"error":"no good","param":"city"}')


def test_a_direct_handler_that_raises_is_a_500_and_the_server_goes_on(
    server: BackgroundServer,
) -> None:
    answer = _exchange(server, _post("/broken", b"{}", _length(b"{}")))
    assert answer.startswith(b"HTTP/1.1 500 ")
    assert _exchange(server, _post("/echo", b"ok", _length(b"ok"))).endswith(b"/echo 2 ok")


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (_post("/echo", b"hi", _length(b"hi"), token=b"wrong"), b"401"),
        (_post("/echo", b"hi", _length(b"hi"), token=b""), b"401"),
        (_post("/echo", b"", b"Content-Length: 5000"), b"413"),
    ],
    ids=["wrong-token", "no-token", "declared-too-large"],
)
def test_requests_the_guard_refuses_are_refused_on_a_hot_route_too(
    server: BackgroundServer, request_bytes: bytes, status: bytes
) -> None:
    answer = _exchange(server, request_bytes)
    assert answer.startswith(b"HTTP/1.1 " + status)


def test_a_chunked_body_goes_through_asgi_where_the_guard_bounds_it(
    server: BackgroundServer,
) -> None:
    before = CountingApp.asgi_calls
    body = b"3\r\nabc\r\n0\r\n\r\n"
    answer = _exchange(server, _post("/echo", body, b"Transfer-Encoding: chunked"))
    assert answer.endswith(b"/echo 3 abc")
    assert CountingApp.asgi_calls == before + 1


def test_a_chunked_body_over_the_cap_is_refused_as_it_is_read(server: BackgroundServer) -> None:
    chunk = b"x" * 600
    body = b"%x\r\n%s\r\n" % (len(chunk), chunk) * 2 + b"0\r\n\r\n"
    answer = _exchange(server, _post("/echo", body, b"Transfer-Encoding: chunked"))
    assert answer.startswith(b"HTTP/1.1 413 ")


async def test_a_client_gone_before_the_body_ends_leaves_nothing_running() -> None:
    config = SimpleNamespace(
        loaded=True, loaded_app=Guard(_app()), root_path="", timeout_keep_alive=5.0
    )
    state = SimpleNamespace(connections=set(), tasks=set(), default_headers=[])
    protocol = HttpProtocol(config, state, {})
    transport = _Transport()
    protocol.connection_made(transport)
    protocol.data_received(b"POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
    protocol.connection_lost(None)
    for _ in range(10):
        await asyncio.sleep(0)
    assert transport.writes == []
    assert state.tasks == set()


class _Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 9) if name in ("sockname", "peername") else default

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.writes.append(bytes(data))

    def close(self) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass
