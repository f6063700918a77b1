"""JSON in and out of palaestra's HTTP servers: orjson responses and one error shape.

Errors use OpenAI's shape, ``{"error": {"message", "type", "param", "code"}}``, which OpenAI
clients and NeMo Gym's model client both read. A body that is not JSON is a 400; a body with a
wrong or missing field is a 422 whose ``param`` names the field.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from palaestra.errors import PalaestraError
from palaestra.wire.protocol import error_body

Handler = Callable[[Request], Awaitable[Response]]


class JSONResponse(Response):
    """A JSON response serialised by orjson (several times faster than the stdlib encoder)."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)

    def init_headers(self, headers: Mapping[str, str] | None = None) -> None:
        if headers is not None or self.status_code < 200 or self.status_code in (204, 304):
            super().init_headers(headers)
            return
        # The usual answer's two headers, without Starlette's general case (per request).
        self.raw_headers = [
            (b"content-length", b"%d" % len(self.body)),
            (b"content-type", b"application/json"),
        ]


class HotRequest(Request):
    """A request whose body is read without Starlette's stream generator (one message)."""

    _body: bytes

    async def body(self) -> bytes:
        try:
            return self._body
        except AttributeError:
            pass
        chunks: list[bytes] = []
        while True:
            message = await self._receive()
            if message["type"] != "http.request":
                raise ClientDisconnect()
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        self._body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        return self._body


class RequestError(PalaestraError):
    """A request the server refuses; ``param`` names the offending field when there is one.

    ``kind`` is the error ``type`` (e.g. ``session_lost``) when the default for the status
    would not tell the client enough; ``headers`` go on the answer (e.g. ``Retry-After``).
    """

    def __init__(
        self,
        status: int,
        message: str,
        *,
        param: str | None = None,
        kind: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.kind = kind
        self.headers = headers


def error_response(
    status: int, message: str, *, param: str | None = None, kind: str | None = None
) -> JSONResponse:
    return JSONResponse(error_body(status, message, kind=kind, param=param), status_code=status)


def request_error_response(error: RequestError) -> JSONResponse:
    response = error_response(error.status, error.message, param=error.param, kind=error.kind)
    if error.headers:
        response.headers.update(error.headers)
    return response


async def json_object(request: Request) -> dict[str, Any]:
    """The request body as a JSON object; ``RequestError`` (400 or 422) otherwise."""
    raw = await request.body()
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise RequestError(400, f"request body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise RequestError(422, "request body must be a JSON object", param="body")
    return body


def require(body: dict[str, Any], field: str, kinds: type | tuple[type, ...], what: str) -> None:
    """Refuse (422) a body whose ``field`` is missing or not of ``kinds``."""
    if field not in body:
        raise RequestError(422, f"field '{field}' is required", param=field)
    if not isinstance(body[field], kinds):
        raise RequestError(422, f"field '{field}' must be {what}", param=field)


def require_objects(body: dict[str, Any], field: str, what: str) -> list[dict[str, Any]]:
    """The list of objects at ``field``; 422 naming the field, or the item that is no object."""
    require(body, field, list, what)
    items: list[Any] = body[field]
    for position, item in enumerate(items):
        if not isinstance(item, dict):
            raise RequestError(422, "must be an object", param=f"{field}[{position}]")
    return items


class HotRoutedApp(Starlette):
    """A Starlette app whose hot ``POST`` routes skip Starlette's middleware and router.

    A rollout crosses the hot routes (seed, tool, verify, close, run) several times; through
    Starlette's two middlewares, its router (a regex per route) and ``Response.__call__`` each
    crossing cost far more CPU than a raw ASGI endpoint (measured under uvicorn:
    benchmarks/results/micro.md). Here a hot route's handler is looked up by path and its
    answer sent in two messages; what it raises goes to the app's exception handlers, as
    Starlette's would send it; anything else propagates to the server (logged, a 500), as
    through Starlette. Every other request (other methods, other routes, the lifespan) is
    Starlette's.
    """

    def __init__(self, *, hot: Mapping[str, Handler], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.hot = dict(hot)
        self._direct = {path: DirectRoute(self, handler) for path, handler in self.hot.items()}

    def direct_route(self, scope: Scope) -> DirectRoute | None:
        """The hot route palaestra's HTTP protocol may call with the whole body, if any."""
        return self._direct.get(scope["path"]) if scope["method"] == "POST" else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            handler = self.hot.get(scope["path"])
            if handler is not None:
                response = await self.respond(handler, HotRequest(scope, receive))
                await send(
                    {
                        "type": "http.response.start",
                        "status": response.status_code,
                        "headers": response.raw_headers,
                    }
                )
                await send({"type": "http.response.body", "body": response.body})
                return
        await super().__call__(scope, receive, send)

    async def respond(self, handler: Handler, request: Request) -> Response:
        """The handler's answer; what it raises goes to the app's exception handlers."""
        try:
            return await handler(request)
        except Exception as exc:
            on_error = self._handler_of(exc)
            if on_error is None:
                raise
            response = on_error(request, exc)  # Starlette takes both kinds
            if inspect.isawaitable(response):
                response = await response
            return response  # type: ignore[no-any-return]

    def _handler_of(self, exc: Exception) -> Any:
        for kind in type(exc).__mro__:
            found = self.exception_handlers.get(kind)
            if found is not None:
                return found
        return None


class DirectRoute:
    """A hot route as palaestra's HTTP protocol calls it: the whole body in, the answer out.

    No ASGI messages (``receive``, two ``send``) and no dispatch through the app: the
    request's handler and its exception handlers are the same as on the ASGI path.
    """

    __slots__ = ("app", "handler")

    def __init__(self, app: HotRoutedApp, handler: Handler) -> None:
        self.app, self.handler = app, handler

    async def answer(
        self, scope: Scope, body: bytes
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        request = HotRequest(scope, _no_more)
        request._body = body
        response = await self.app.respond(self.handler, request)
        content = response.body
        return (
            response.status_code,
            response.raw_headers,
            bytes(content) if type(content) is not bytes else content,
        )


async def _no_more() -> Message:
    """A direct request's ``receive``: its body was read whole, only the end is left."""
    return {"type": "http.disconnect"}
