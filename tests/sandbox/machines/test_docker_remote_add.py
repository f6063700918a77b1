"""A task's Dockerfile cannot make the Docker daemon fetch from the host's network."""

from __future__ import annotations

import http.server
import secrets
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from palaestra.errors import SandboxFailure
from palaestra.sandbox.machines.docker import DockerProvider
from tests.sandbox.machines.docker_support import daemon_or_skip


class _Counting(http.server.BaseHTTPRequestHandler):
    requests: list[str] = []

    def do_GET(self) -> None:
        type(self).requests.append(self.path)
        body = b"a host service's secret\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        return


@pytest.fixture
def host_service() -> Iterator[tuple[int, list[str]]]:
    """An HTTP service on the host's loopback that counts the requests it is sent."""
    seen: list[str] = []
    handler = type("Counting", (_Counting,), {"requests": seen})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], seen
    finally:
        server.shutdown()
        server.server_close()


async def test_an_add_of_a_host_url_is_refused_before_the_daemon_fetches_it(
    host_service: tuple[int, list[str]], tmp_path: Path
) -> None:
    daemon_or_skip()
    port, seen = host_service
    nonce = secrets.token_hex(6)
    (tmp_path / "Dockerfile").write_text(
        "FROM debian:bookworm-slim\n"
        f"ARG SECRET=http://127.0.0.1:{port}/secret-{nonce}\n"
        "ADD $SECRET /secret\n"
    )
    provider = DockerProvider()
    try:
        with pytest.raises(SandboxFailure) as refused:
            await provider.build(tmp_path)
    finally:  # an image built on the old code goes too
        for line in (await provider._run("images", "-q", "--filter", "label=palaestra.digest"))[
            1
        ].split():
            inspected = await provider._run("history", "--no-trunc", line.decode())
            if nonce.encode() in inspected[1]:
                await provider._run("rmi", "--force", line.decode())
    message = str(refused.value)
    assert message.startswith(f"{tmp_path / 'Dockerfile'}:3: ADD of http://127.0.0.1:{port}/")
    assert "\n" not in message
    assert seen == [], "the daemon fetched from the host's network"
