"""The head server of a stack: a small registry listing the running servers and where."""

from __future__ import annotations

from collections.abc import Callable

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from palaestra.serve.http_json import JSONResponse
from palaestra.types import JsonDict


def head_app(servers: Callable[[], list[JsonDict]], *, stack: str) -> Starlette:
    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "stack": stack})

    async def listing(request: Request) -> Response:
        return JSONResponse({"stack": stack, "servers": servers()})

    return Starlette(
        routes=[Route("/", health, methods=["GET"]), Route("/servers", listing, methods=["GET"])]
    )
