"""A ``Model`` served over HTTP as an OpenAI-compatible endpoint (NeMo Gym's model server).

Routes: ``GET /`` (liveness), ``GET /v1/models``, ``POST /v1/responses`` and
``POST /v1/chat/completions``. A model with a native ``chat`` method (the local model) answers
chat requests directly; any other model answers them through the Responses conversion.
``/v1/responses`` answers an Open Responses ``Response`` (``palaestra.wire.open_responses``),
or with ``"stream": true`` the same Response as the spec's server-sent events.

Over a pool of endpoints the server keeps each rollout's calls on one endpoint when the client
names the rollout: palaestra's clients send ``ROLLOUT_HEADER`` and ``SESSION_ID_HEADER``
(``X-Session-ID``, which other clients and routers send too); a client that sends neither gets
``ROLLOUT_COOKIE`` set on every answer, which NeMo Gym's agents send back on the rollout's next
model call. A client that does neither (a bare OpenAI client) is routed least-loaded per call.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from palaestra.errors import InputError, ModelAuthError, ModelError, ModelTimeout
from palaestra.http.guard import BodyTooLarge
from palaestra.http.json import (
    HotRoutedApp,
    JSONResponse,
    RequestError,
    error_response,
    json_object,
    request_error_response,
    require,
)
from palaestra.http.sessions import header_of
from palaestra.models.affinity import ROLLOUT_SCOPE, KeyedScopes, RolloutScope, valid_key
from palaestra.models.base import Model
from palaestra.models.chat_format import (
    chat_request_to_responses_params,
    response_to_chat_completion,
)
from palaestra.models.pool import ModelPool
from palaestra.observe.metrics_http import metrics_route, model_metrics
from palaestra.types import JsonDict
from palaestra.wire.open_responses import conform, event_stream, refuse_unserved, take_stream
from palaestra.wire.protocol import ROLLOUT_COOKIE, ROLLOUT_HEADER, SESSION_ID_HEADER

ChatMethod = Callable[[JsonDict], Awaitable[JsonDict]]


def _refuse_stream(body: JsonDict) -> None:
    if body.get("stream"):
        raise RequestError(422, "streaming is not supported", param="stream")


def _native_chat(model: Model) -> ChatMethod | None:
    chat: Any = getattr(model, "chat", None)
    return chat if callable(chat) else None


def _on_error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, RequestError):
        return request_error_response(exc)
    if isinstance(exc, InputError):
        return error_response(422, exc.describe(), param=exc.field)
    if isinstance(exc, BodyTooLarge):  # a body without a length, past the guard's cap
        return error_response(413, str(exc))
    if isinstance(exc, ModelAuthError):  # the backend refused our key: not worth a retry
        return error_response(401, exc.reason, kind="authentication_error")
    if isinstance(exc, ModelTimeout):
        return error_response(504, exc.reason, kind="model_timeout")
    if isinstance(exc, ModelError):
        return error_response(502, exc.reason, kind="model_error")
    return error_response(500, f"{type(exc).__name__}: {exc}")


async def _as_chat(response: Awaitable[JsonDict]) -> JsonDict:
    return response_to_chat_completion(await response)


async def _conformed(response: Awaitable[JsonDict], params: JsonDict) -> JsonDict:
    return conform(await response, params)


def _answer(body: JsonDict, stream: bool) -> Response:
    if stream:
        return Response(event_stream(body), media_type="text/event-stream")
    return JSONResponse(body)


_ROLLOUT_HEADER = ROLLOUT_HEADER.encode()
_SESSION_ID_HEADER = SESSION_ID_HEADER.encode()


def model_app(model: Model, *, model_id: str) -> Starlette:
    """An ASGI app answering OpenAI Responses and Chat Completions requests with ``model``."""
    created = int(time.time())
    native_chat = _native_chat(model)
    served: dict[str, int] = {}  # requests received by route, for /metrics
    # Only a pool routes by rollout. Over one model the rollout's name is not read at all
    # (nor passed on to the backend): reading and scoping it cost the model server ~10% of
    # its CPU per call, for nothing unless the backend were itself a pool behind palaestra.
    pooled = KeyedScopes() if isinstance(model, ModelPool) else None

    async def in_rollout(
        request: Request, call: Awaitable[JsonDict], *, stream: bool = False
    ) -> Response:
        """``call``'s answer, made in the scope of the rollout the request names (if any)."""
        if pooled is None:
            return _answer(await call, stream)
        key = valid_key(header_of(request, _ROLLOUT_HEADER)) or valid_key(
            header_of(request, _SESSION_ID_HEADER)
        )
        cookie = None
        if key is None:
            key = valid_key(request.cookies.get(ROLLOUT_COOKIE)) or RolloutScope().key
            cookie = key
        # Set here, not with ``with scope``: two calls of one rollout may overlap, and the
        # scope object keeps only one token.
        token = ROLLOUT_SCOPE.set(pooled.scope(key))
        try:
            answer = _answer(await call, stream)
        finally:
            ROLLOUT_SCOPE.reset(token)
        if cookie is not None:  # on every answer: NeMo Gym's agent keeps only the last ones
            answer.raw_headers.append(
                (b"set-cookie", b"%s=%s; Path=/" % (ROLLOUT_COOKIE.encode(), cookie.encode()))
            )
        return answer

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def models(request: Request) -> Response:
        entry = {"id": model_id, "object": "model", "created": created, "owned_by": "palaestra"}
        return JSONResponse({"object": "list", "data": [entry]})

    async def responses(request: Request) -> Response:
        served["responses"] = served.get("responses", 0) + 1
        body = await json_object(request)
        require(body, "input", (str, list), "a string or a list of input items")
        stream = take_stream(body)
        refuse_unserved(body)
        return await in_rollout(request, _conformed(model.respond(body), body), stream=stream)

    async def chat_completions(request: Request) -> Response:
        served["chat_completions"] = served.get("chat_completions", 0) + 1
        body = await json_object(request)
        require(body, "messages", list, "a list of chat messages")
        _refuse_stream(body)
        if native_chat is not None:
            return await in_rollout(request, native_chat(body))
        return await in_rollout(
            request, _as_chat(model.respond(chat_request_to_responses_params(body)))
        )

    routes = [
        Route("/", health, methods=["GET"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/v1/responses", responses, methods=["POST"]),
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        metrics_route(model_metrics(model, served)),
    ]
    handlers: dict[Any, Callable[[Request, Exception], Response]] = {
        RequestError: _on_error,
        InputError: _on_error,
        ModelError: _on_error,
        BodyTooLarge: _on_error,
    }
    # A model call is the stack's hot request: answered without Starlette's router.
    hot = {"/v1/responses": responses, "/v1/chat/completions": chat_completions}
    return HotRoutedApp(hot=hot, routes=routes, exception_handlers=handlers)
