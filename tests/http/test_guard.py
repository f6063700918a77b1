"""The bearer-token guard in front of every server: a malformed token is a 401, never a 500.

The servers run as a user runs them (``palaestra serve env|mcp``, token from
``PALAESTRA_SERVER_TOKEN``), and the requests go out raw over ``http.client``, whose header
values may be any bytes, as a hostile client's are.
"""

from __future__ import annotations

import http.client
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from palaestra.http.announce import parse_ready_line
from tests.cli.test_collect_cli import PALAESTRA

SECRET = "s3crét"  # not ASCII itself: a client sends its UTF-8
SERVERS = {
    "env": ["env", "counter"],
    "mcp": ["mcp", "counter", "--transport", "http"],
}
REFUSED = b'{"error":{"message":"missing or wrong bearer token","type":"invalid_request_error"'

MALFORMED = [
    pytest.param("Bearer tökén".encode(), id="utf-8"),
    pytest.param(b"Bearer \xff\xfe\x80", id="not-utf-8"),
    pytest.param(b"Bearer " + "s3crét".encode("latin-1"), id="the-token-in-latin-1"),
    pytest.param(b"Basic czNjcmV0", id="not-bearer"),
    pytest.param(b"Bearer", id="no-token"),
    pytest.param(b"\xe2\x82\xac", id="no-scheme"),
]


class Server:
    """A ``palaestra serve`` process with the token set, its stderr kept in a file."""

    def __init__(self, args: list[str], log: Path) -> None:
        self.log = log
        self.process = subprocess.Popen(
            [*PALAESTRA, "serve", *args, "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=log.open("w"),
            text=True,
            env={**os.environ, "PALAESTRA_SERVER_TOKEN": SECRET},
        )
        assert self.process.stdout is not None
        for line in self.process.stdout:
            facts = parse_ready_line(line.strip())
            if facts is not None:
                self.port = int(str(facts["url"]).rsplit(":", 1)[1])
                return
        raise AssertionError(f"serve exited before it was ready: {log.read_text()}")

    def ask(
        self, method: str, path: str, authorization: bytes, body: bytes = b""
    ) -> tuple[int, bytes]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            connection.putrequest(method, path)
            connection.putheader("Authorization", authorization)
            connection.putheader("Content-Type", "application/json")
            connection.putheader("Content-Length", str(len(body)))
            connection.endheaders(body)
            answer = connection.getresponse()
            return answer.status, answer.read()
        finally:
            connection.close()

    def stop(self) -> str:
        self.process.terminate()
        self.process.wait(20)
        return self.log.read_text()


@pytest.fixture(scope="module", params=sorted(SERVERS))
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    log = tmp_path_factory.mktemp(request.param) / "stderr"
    served = Server(SERVERS[request.param], log)
    yield served
    assert "Traceback" not in served.stop()


@pytest.mark.parametrize("authorization", MALFORMED)
def test_a_malformed_authorization_header_is_a_401_in_one_line(
    server: Server, authorization: bytes
) -> None:
    for method, path, body in (
        ("GET", "/", b""),
        ("POST", "/seed_session", b"{}"),  # the env server's direct route: read whole first
        ("POST", "/mcp", b"{}"),
    ):
        status, answer = server.ask(method, path, authorization, body)
        assert (status, answer.startswith(REFUSED), answer.count(b"\n")) == (401, True, 0)
    assert "Traceback" not in server.log.read_text()


def test_the_right_token_gets_in_even_when_it_is_not_ascii(server: Server) -> None:
    status, answer = server.ask("GET", "/", b"Bearer " + SECRET.encode())
    assert status == 200
    assert orjson.loads(answer)["status"] == "ok"
