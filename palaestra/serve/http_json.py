"""JSON in and out of palaestra's HTTP servers: orjson responses and one error shape.

Errors use OpenAI's shape, ``{"error": {"message", "type", "param", "code"}}``, which OpenAI
clients and NeMo Gym's model client both read. A body that is not JSON is a 400; a body with a
wrong or missing field is a 422 whose ``param`` names the field.
"""

from __future__ import annotations

from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from palaestra.errors import PalaestraError
from palaestra.protocol import error_body


class JSONResponse(Response):
    """A JSON response serialised by orjson (several times faster than the stdlib encoder)."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


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
