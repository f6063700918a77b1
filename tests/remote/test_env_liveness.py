"""Which liveness routes the remote environment client accepts: ``GET /``, else ``/health``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from palaestra.errors import ConfigError
from palaestra.http.runner import BackgroundServer
from palaestra.remote.env import RemoteEnvironmentClient


def server(statuses: dict[str, int]) -> tuple[Starlette, list[str]]:
    """A server answering each GET route with its status; it records what was asked."""
    asked: list[str] = []

    def answer(status: int) -> Callable[[Request], Awaitable[Response]]:
        async def handler(request: Request) -> Response:
            asked.append(request.url.path)
            return JSONResponse({"status": "ok"}, status_code=status)

        return handler

    routes = [Route(path, answer(status), methods=["GET"]) for path, status in statuses.items()]
    return Starlette(routes=routes), asked


async def test_a_server_with_only_health_is_alive_as_nel_serve_is() -> None:
    app, asked = server({"/health": 200})
    with BackgroundServer(app) as served:
        client = await RemoteEnvironmentClient.connect(served.url)
        await client.aclose()
    assert asked == ["/health"]  # GET / was a 404 (not recorded): then /health


async def test_a_server_with_a_root_route_is_asked_once() -> None:
    app, asked = server({"/": 200, "/health": 200})
    with BackgroundServer(app) as served:
        client = await RemoteEnvironmentClient.connect(served.url)
        await client.aclose()
    assert asked == ["/"]


@pytest.mark.parametrize(
    ("statuses", "said"),
    [
        ({}, "answered GET /: 404, GET /health: 404"),
        ({"/": 500, "/health": 200}, "answered GET /: 500"),  # broken, not absent: no fallback
        ({"/health": 503}, "answered GET /: 404, GET /health: 503"),
    ],
    ids=["neither", "root-broken", "health-unavailable"],
)
async def test_a_server_that_is_not_alive_is_one_line_naming_what_it_answered(
    statuses: dict[str, int], said: str
) -> None:
    app, _ = server(statuses)
    with BackgroundServer(app) as served, pytest.raises(ConfigError) as raised:
        await RemoteEnvironmentClient.connect(served.url)
    assert str(raised.value) == f"environment server {served.url} {said}"
