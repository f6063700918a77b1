"""``http+unix://`` URLs: HTTP over a Unix socket, as a stack's servers reach each other."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from palaestra.transport import ConnectFailed, HttpClient, InvalidUrl, shown_url, unix_url
from palaestra.transport.client import parse_target


def test_a_unix_url_names_the_socket_path_and_the_request_path() -> None:
    url = unix_url("/tmp/a dir/env.sock") + "/seed_session?x=1"
    target = parse_target(url)
    assert url.startswith("http+unix://%2Ftmp%2Fa%20dir%2Fenv.sock/")
    assert (target.host, target.path, target.host_header) == (
        "/tmp/a dir/env.sock",
        "/seed_session?x=1",
        "localhost",
    )
    assert target.shown == "unix:/tmp/a dir/env.sock"
    assert parse_target(unix_url("/tmp/env.sock")).path == "/"


def test_a_unix_url_without_an_absolute_socket_path_is_refused() -> None:
    with pytest.raises(InvalidUrl, match="absolute socket path"):
        parse_target("http+unix://env.sock/seed_session")


async def test_requests_over_a_unix_socket_share_one_kept_alive_connection(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.sock"
    accepted: list[int] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(1)
        while head := await reader.readuntil(b"\r\n\r\n"):
            assert b"Host: localhost\r\n" in head
            length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
            body = await reader.readexactly(length)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            await writer.drain()

    server = await asyncio.start_unix_server(answer, str(path))
    client = HttpClient()
    try:
        for body in (b"one", b"two"):
            reply = await client.request("POST", unix_url(str(path)) + "/echo", body=body)
            assert (reply.status, reply.body) == (200, body)
    finally:
        await client.aclose()
        server.close()
    assert len(accepted) == 1


async def test_a_socket_nobody_listens_on_is_a_connect_failure_naming_it(tmp_path: Path) -> None:
    client = HttpClient()
    try:
        with pytest.raises(ConnectFailed, match=f"unix:{tmp_path}/none.sock"):
            await client.request("GET", unix_url(str(tmp_path / "none.sock")) + "/")
    finally:
        await client.aclose()


def test_a_unix_url_is_shown_as_its_socket_path_and_route() -> None:
    base = unix_url("/tmp/a dir/env.sock")
    assert shown_url(base) == "unix:/tmp/a dir/env.sock"
    assert shown_url(base + "/seed_session?x=1") == "unix:/tmp/a dir/env.sock/seed_session?x=1"
    assert shown_url("http://127.0.0.1:8000/v1/responses") == "http://127.0.0.1:8000/v1/responses"
