"""Every transport test runs twice: on asyncio's own event loop and on uvloop (``collect``'s)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import pytest
import uvloop

from palaestra.transport import HttpClient
from tests.transport.raw_server import Servers

LoopFactory = Callable[[], asyncio.AbstractEventLoop]

LOOP_FACTORIES: dict[str, LoopFactory] = {
    "asyncio": asyncio.new_event_loop,
    "uvloop": uvloop.new_event_loop,
}


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, LoopFactory]:
    return LOOP_FACTORIES


@pytest.fixture(params=list(LOOP_FACTORIES))
def loop_factory(request: pytest.FixtureRequest) -> LoopFactory:
    """For the synchronous tests that run their own loops: each runs on both."""
    return LOOP_FACTORIES[str(request.param)]


@pytest.fixture
async def servers() -> AsyncIterator[Servers]:
    servers = Servers()
    yield servers
    for server in servers.started:
        await server.close()
    assert [error for server in servers.started for error in server.errors] == []


@pytest.fixture
async def client() -> AsyncIterator[HttpClient]:
    client = HttpClient()
    yield client
    await client.aclose()


@pytest.fixture
async def new_client() -> AsyncIterator[Callable[..., HttpClient]]:
    """Makes clients with options; each is closed after the test."""
    made: list[HttpClient] = []

    def make(**options: Any) -> HttpClient:
        made.append(HttpClient(**options))
        return made[-1]

    yield make
    for client in made:
        await client.aclose()
