"""Every transport test runs twice: on asyncio's own event loop and on uvloop (``collect``'s)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import pytest
import uvloop

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
