"""The gateway's HTTP routes: a bare ASGI app whose every request is one function of its body.

Routes (``<api>`` is ``chat/completions``, ``completions`` or ``responses``):

- ``POST /r/<rollout>/v1/<api>`` and ``GET /r/<rollout>/v1/models``: a rollout's endpoint,
  with its secret as the bearer token (401 without it, 404 for a rollout not open);
- ``POST /v1/<api>``, ``GET /v1/models`` with ``X-Session-ID: <rollout>`` and its secret;
- ``/admin/...`` with the admin token, when the gateway has one (see ``admin``).

No Starlette on this path: the body is parsed with orjson once, the answer written in one
piece. palaestra's HTTP protocol calls ``direct_route`` with the whole body (no ASGI messages);
a request it cannot call that way (a body without a declared length) comes through
``__call__``, which reads the body (bounded) and answers the same.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

import orjson

from palaestra.errors import ModelError, ModelTimeout
from palaestra.gateway import admin, apis
from palaestra.gateway.rollout import GatewayRollout, Prepared, UnknownResponse
from palaestra.http.guard import DEFAULT_MAX_BODY, bearer_matches
from palaestra.models.affinity import ROLLOUT_SCOPE
from palaestra.models.chat_format import CHAT_REUSE, finish_reason
from palaestra.models.versions import served_by
from palaestra.wire.protocol import SESSION_ID_HEADER, error_body

if TYPE_CHECKING:
    from palaestra.gateway.gateway import Gateway

Headers = list[tuple[bytes, bytes]]
Answer = tuple[int, Headers, bytes]

_APIS = {"chat/completions": "chat", "completions": "completions", "responses": "responses"}
_SESSION_ID = SESSION_ID_HEADER.lower().encode()
_JSON = b"application/json"
_CHALLENGE = (b"www-authenticate", b"Bearer")


def error(
    status: int, message: str, *, kind: str | None = None, param: str | None = None
) -> Answer:
    body = orjson.dumps(error_body(status, message, kind=kind, param=param))
    headers = [(b"content-type", _JSON)]
    if status == 401:
        headers.append(_CHALLENGE)
    return status, headers, body


def json_answer(payload: Any, status: int = 200) -> Answer:
    return status, [(b"content-type", _JSON)], orjson.dumps(payload)


def header(scope: dict[str, Any], name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value)
    return None


class GatewayApp:
    """The ASGI app of one ``Gateway``."""

    def __init__(self, gateway: Gateway, max_body: int = DEFAULT_MAX_BODY) -> None:
        self.gateway = gateway
        self.max_body = max_body
        self._direct = _Direct(self)
        self._created = int(time.time())

    def direct_route(self, scope: dict[str, Any]) -> _Direct | None:
        """Every request with a declared, bounded length is answered from its whole body."""
        for name, value in scope["headers"]:
            if name == b"content-length":
                return self._direct if value.isdigit() and int(value) <= self.max_body else None
        return None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                status, headers, body = error(413, f"request body over {self.max_body} bytes")
                break
            chunks.append(chunk)
            if not message.get("more_body", False):
                status, headers, body = await self.answer(scope, b"".join(chunks))
                break
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def answer(self, scope: dict[str, Any], body: bytes) -> Answer:
        path: str = scope["path"]
        method: str = scope["method"]
        if path.startswith("/r/"):
            rollout_id, _, rest = path[3:].partition("/")
            if not rest.startswith("v1/"):
                return error(404, f"no route {path}")
            return await self._api(scope, method, rollout_id, rest[3:], body)
        if path.startswith("/v1/"):
            named = header(scope, _SESSION_ID)
            if named is None:
                self.gateway.counts.refused += 1
                return error(
                    401,
                    "name the rollout: call its base URL (/r/<rollout>/v1) or send "
                    f"{SESSION_ID_HEADER}",
                )
            return await self._api(scope, method, named.decode("latin-1"), path[4:], body)
        if path.startswith("/admin/") or path == "/metrics":
            return await admin.answer(self.gateway, scope, method, path, body)
        if path == "/" and method == "GET":
            return json_answer({"status": "ok"})
        return error(404, f"no route {path}")

    def _rollout(self, scope: dict[str, Any], rollout_id: str) -> GatewayRollout | Answer:
        rollout = self.gateway.rollouts.get(rollout_id)
        if rollout is None or rollout.closed:
            self.gateway.counts.refused += 1
            return error(404, f"no open rollout {rollout_id!r:.80} on this gateway")
        if not bearer_matches(header(scope, b"authorization"), rollout.secret):
            self.gateway.counts.refused += 1
            return error(401, "missing or wrong API key for this rollout")
        return rollout

    async def _api(
        self, scope: dict[str, Any], method: str, rollout_id: str, route: str, body: bytes
    ) -> Answer:
        found = self._rollout(scope, rollout_id)
        if isinstance(found, tuple):
            return found
        if route == "models" and method == "GET":
            return json_answer(self._models())
        api = _APIS.get(route)
        if api is None or method != "POST":
            return error(404, f"no route {method} /v1/{route}")
        try:
            parsed = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            return error(400, f"request body is not valid JSON: {exc}")
        if not isinstance(parsed, dict):
            return error(400, "request body must be a JSON object", param="body")
        try:
            request = apis.parse(api, parsed)
            prepared = found.prepare(request)
        except apis.BadRequest as bad:
            self.gateway.counts.refused += 1
            return error(400, bad.message, param=bad.param)
        except UnknownResponse as unknown:
            self.gateway.counts.refused += 1
            return error(
                400,
                f"previous_response_id {unknown.args[0]!r:.80} names no answer of this rollout",
                param="previous_response_id",
            )
        return await self._call(found, request, prepared)

    async def _call(
        self, rollout: GatewayRollout, request: apis.Request, prepared: Prepared
    ) -> Answer:
        gateway = self.gateway
        started = time.time()
        if not await gateway.admit():
            return error(503, "the gateway is closing", kind="unavailable")
        scope_token = ROLLOUT_SCOPE.set(rollout.scope)
        reuse_token = CHAT_REUSE.set(rollout.chat_reuse)
        answer = None
        try:
            answer = await gateway.model.respond(prepared.params)
            version = served_by(answer, rollout.scope.clock)
        except asyncio.CancelledError:
            rollout.record(
                prepared, api=request.api, stream=request.stream, started=started,
                answer=None, finish_reason=None, policy_version=None, error="cancelled",
            )  # fmt: skip
            raise
        except Exception as failure:
            gateway.counts.errors += 1
            reason = failure.reason if isinstance(failure, ModelError) else repr(failure)
            rollout.record(
                prepared, api=request.api, stream=request.stream, started=started,
                answer=None, finish_reason=None, policy_version=None, error=reason,
            )  # fmt: skip
            if isinstance(failure, ModelTimeout):
                return error(504, reason, kind="model_timeout")
            if isinstance(failure, ModelError):
                return error(502, reason, kind="model_error")
            return error(500, f"the model failed: {reason}")
        finally:
            CHAT_REUSE.reset(reuse_token)
            ROLLOUT_SCOPE.reset(scope_token)
            gateway.release()
        rollout.record(
            prepared, api=request.api, stream=request.stream, started=started, answer=answer,
            finish_reason=finish_reason(answer), policy_version=version, error=None,
        )  # fmt: skip
        calls = gateway.counts.calls
        calls[request.api] = calls.get(request.api, 0) + 1
        body, kind = apis.answer(request, answer, gateway.model_id)
        return 200, [(b"content-type", kind)], body

    def _models(self) -> dict[str, Any]:
        entry = {"id": self.gateway.model_id, "object": "model", "owned_by": "palaestra"}
        return {"object": "list", "data": [{**entry, "created": self._created}]}


class _Direct:
    """The route palaestra's HTTP protocol calls with a whole body (``direct_route``)."""

    __slots__ = ("app",)

    def __init__(self, app: GatewayApp) -> None:
        self.app = app

    async def answer(self, scope: dict[str, Any], body: bytes) -> Answer:
        return await self.app.answer(scope, body)
