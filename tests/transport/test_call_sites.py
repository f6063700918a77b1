"""What the transport's callers mark idempotent: model calls and seeds may run twice, tool
calls may not. Each request below lands on a kept-alive connection the server closed while it
was idle, with no retry budget above the transport, so only the transport's resend can save it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from palaestra.errors import ToolFailure
from palaestra.models.base import ModelStats
from palaestra.models.openai.retry import RetryPolicy, Timeouts, post_json
from palaestra.remote.env import RemoteEnvironmentClient
from palaestra.transport import HttpClient, Proxies
from tests.transport.raw_server import Peer, Server, Servers, answer, parse_request

NO_RETRIES = RetryPolicy(max_retries=0)


async def answer_json(peer: Peer) -> None:
    while await peer.read_request() is not None:
        peer.send(answer(f'{{"connection": {peer.index}}}'.encode(), "Content-Type: text/json"))


@pytest.fixture
async def http() -> AsyncIterator[HttpClient]:
    client = HttpClient(proxies=Proxies())
    yield client
    await client.aclose()


def routes(server: Server) -> list[tuple[int, str]]:
    """(connection, request target) of every request the server read."""
    return [
        (peer.index, parse_request(raw)[0].split()[1])
        for peer in server.peers
        for raw in peer.requests
    ]


async def test_a_model_call_on_a_connection_that_died_idle_is_sent_again(
    servers: Servers, http: HttpClient
) -> None:
    server = await servers.start(answer_json)
    url = server.url("/v1/responses")
    stats = ModelStats()

    async def call(text: str) -> object:
        body = {"input": text}
        return await post_json(
            http, url, body, headers={}, timeouts=Timeouts(), retry=NO_RETRIES, stats=stats
        )

    assert await call("a") == {"connection": 0}
    server.peers[0].writer.close()
    assert await call("b") == {"connection": 1}
    assert (stats.retries, stats.failures) == (0, 0)


async def test_a_seed_is_sent_again_but_a_tool_call_never_is(
    servers: Servers, http: HttpClient
) -> None:
    server = await servers.start(answer_json)
    env = RemoteEnvironmentClient(server.url("").rstrip("/"), http=http, retry=NO_RETRIES)
    session = await env.seed({"responses_create_params": {"input": "x"}})
    server.peers[0].writer.close()
    with pytest.raises(ToolFailure, match="not resent"):
        await env.call_tool(session, "transfer_money", {"amount": 100})
    await env.seed({"responses_create_params": {"input": "y"}})  # a fresh connection now
    server.peers[1].writer.close()
    await env.seed({"responses_create_params": {"input": "z"}})  # the resend reaches the server
    assert routes(server) == [(0, "/seed_session"), (1, "/seed_session"), (2, "/seed_session")]
