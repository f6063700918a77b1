"""A request is sent again after a dead kept-alive connection only if running it twice is safe."""

from __future__ import annotations

import pytest

from palaestra.transport import ConnectionLost, HttpClient
from tests.transport.raw_server import Handler, Peer, Servers, answer, numbered


def first_answer_then_numbered() -> Handler:
    async def handle(peer: Peer) -> None:
        while await peer.read_request() is not None:
            peer.send(answer(b"first") if peer.index == 0 else numbered(peer))

    return handle


async def send_on_a_connection_the_server_just_closed(
    servers: Servers, client: HttpClient, method: str, idempotent: bool | None = None
) -> tuple[list[int], object]:
    """The request lands on a kept-alive connection the server closed while it was idle (the
    client has not run since to notice); the requests each connection saw, and the outcome."""
    server = await servers.start(first_answer_then_numbered())
    await client.request(method, server.url(), body=b"{}" if method == "POST" else None)
    server.peers[0].writer.close()
    try:
        outcome: object = await client.request(
            method,
            server.url(),
            body=b"{}" if method == "POST" else None,
            idempotent=idempotent,
        )
    except ConnectionLost as error:
        outcome = error
    return [len(peer.requests) for peer in server.peers], outcome


async def test_a_post_is_not_resent_after_a_dead_connection_and_says_why(
    servers: Servers, client: HttpClient
) -> None:
    seen, outcome = await send_on_a_connection_the_server_just_closed(servers, client, "POST")
    assert isinstance(outcome, ConnectionLost)
    assert "not resent" in str(outcome) and "idempotent" in str(outcome)
    assert seen == [1]  # a tool call behind it never reached a second connection


async def test_a_get_marked_not_idempotent_is_not_resent(
    servers: Servers, client: HttpClient
) -> None:
    seen, outcome = await send_on_a_connection_the_server_just_closed(
        servers, client, "GET", idempotent=False
    )
    assert isinstance(outcome, ConnectionLost)
    assert seen == [1]


@pytest.mark.parametrize(
    ("method", "idempotent"),
    [("POST", True), ("GET", None), ("PUT", None), ("DELETE", None)],
    ids=["post-marked-idempotent", "get", "put", "delete"],
)
async def test_an_idempotent_request_is_resent_once_on_a_fresh_connection(
    servers: Servers, client: HttpClient, method: str, idempotent: bool | None
) -> None:
    seen, outcome = await send_on_a_connection_the_server_just_closed(
        servers, client, method, idempotent
    )
    assert not isinstance(outcome, ConnectionLost), outcome
    assert getattr(outcome, "body", None) == b"c1r1"
    assert seen == [1, 1]
