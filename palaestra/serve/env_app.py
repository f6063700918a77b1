"""An ``Environment`` served over HTTP: NeMo Gym's resources-server protocol.

``POST /seed_session`` (the task row) starts a session and sets a signed cookie; the same token
is in the ``x-palaestra-session`` header for clients that keep no cookies. ``POST /<tool>``
runs a tool on the parsed arguments and answers its JSON result. ``POST /verify`` answers the
request plus ``reward`` and the verifier fields; ``POST /close_session`` frees the session.
``POST /aggregate_metrics`` and ``GET /tools`` (palaestra's addition: the tool schemas) round
it off. Validation problems are 422 naming the field; a body that is not JSON is 400.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from palaestra.collect.metrics import aggregate_rows
from palaestra.env_client import LocalEnvironmentClient
from palaestra.environment import Environment
from palaestra.errors import RolloutFailure, ToolCallRejected
from palaestra.serve.evaluator import (
    PROTOCOL,
    evaluator_answer,
    evaluator_task,
    is_evaluator_seed,
    is_evaluator_verify,
    prompt_of,
    task_at,
    text_response,
)
from palaestra.serve.guard import BodyTooLarge
from palaestra.serve.http_json import (
    JSONResponse,
    RequestError,
    error_response,
    json_object,
    request_error_response,
    require,
)
from palaestra.serve.sessions_http import COOKIE_NAME, HEADER_NAME, SessionSigner
from palaestra.sessions import SessionExpired
from palaestra.step_env import StepEnvironment
from palaestra.types import JsonDict, Verdict

RESERVED_ROUTES = frozenset(
    {
        "seed_session",
        "verify",
        "close_session",
        "aggregate_metrics",
        "tools",
        "health",
        "reset",
        "step",
    }
)
Handler = Callable[[Request], Awaitable[Response]]


def environment_app(
    environment: Environment,
    *,
    secret: bytes | None = None,
    dataset: list[JsonDict] | None = None,
) -> Starlette:
    """An ASGI app serving ``environment``; sessions live in this process and expire.

    ``dataset`` is the task list NeMo Evaluator's clients address by index.
    """
    tasks = dataset or []
    clashes = RESERVED_ROUTES & set(environment.tool_specs)
    if clashes:
        raise ValueError(f"tool names {sorted(clashes)} clash with protocol routes")
    client = LocalEnvironmentClient(environment)
    signer = SessionSigner(secret or secrets.token_bytes(32))
    routes = [
        Route("/", _health, methods=["GET"]),
        Route("/tools", _tools(client), methods=["GET"]),
        Route("/health", _evaluator_health(environment.name, tasks), methods=["GET"]),
        Route("/dataset_size", _dataset_size(tasks), methods=["GET"]),
        Route("/seed_session", _seed(client, signer, tasks), methods=["POST"]),
        Route("/verify", _verify(client, signer, tasks), methods=["POST"]),
        Route("/close_session", _close(client, signer), methods=["POST"]),
        Route("/aggregate_metrics", aggregate_endpoint, methods=["POST"]),
    ]
    routes += [
        Route(f"/{name}", _tool(client, signer, name), methods=["POST"])
        for name in environment.tool_specs
    ]
    if isinstance(environment, StepEnvironment):
        routes += [
            Route("/reset", _reset(client, signer), methods=["POST"]),
            Route("/step", _step(client, signer), methods=["POST"]),
        ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await client.aclose()  # sessions, the environment's own resources, its worker pool

    app = Starlette(
        lifespan=lifespan,
        routes=routes,
        exception_handlers={
            RequestError: _on_error,
            RolloutFailure: _on_error,
            BodyTooLarge: _on_error,
        },
    )
    app.state.client = client
    return app


async def _health(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


def _evaluator_health(name: str, dataset: list[JsonDict]) -> Handler:
    async def health(request: Request) -> Response:
        return JSONResponse(
            {"status": "ok", "benchmark": name, "dataset_size": len(dataset), "protocol": PROTOCOL}
        )

    return health


def _dataset_size(dataset: list[JsonDict]) -> Handler:
    async def size(request: Request) -> Response:
        return JSONResponse({"size": len(dataset)})

    return size


def _tools(client: LocalEnvironmentClient) -> Handler:
    async def tools(request: Request) -> Response:
        return JSONResponse(
            {"tools": client.tools(), "default_agent": client.environment.default_agent}
        )

    return tools


def _seed(
    client: LocalEnvironmentClient, signer: SessionSigner, dataset: list[JsonDict]
) -> Handler:
    async def seed(request: Request) -> Response:
        task = await json_object(request)
        answer: JsonDict = {}
        if is_evaluator_seed(task):  # NeMo Evaluator: only an index into our task list
            idx, task = task_at(dataset, task)
            answer = prompt_of(idx, task)
        session_id = await client.seed(task)
        token = signer.token(session_id)
        response = JSONResponse(answer)
        response.headers[HEADER_NAME] = token
        response.set_cookie(COOKIE_NAME, token, httponly=True, samesite="lax")
        return response

    return seed


def _tool(client: LocalEnvironmentClient, signer: SessionSigner, name: str) -> Handler:
    async def call(request: Request) -> Response:
        arguments = await json_object(request)
        session_id = _session_of(request, signer)
        try:
            value = await client.call_tool_value(session_id, name, arguments)
        except ToolCallRejected as rejected:
            raise RequestError(422, str(rejected)) from None
        except SessionExpired as expired:
            raise RequestError(404, str(expired), param="session") from None
        return JSONResponse(value)

    return call


def _verify(
    client: LocalEnvironmentClient, signer: SessionSigner, dataset: list[JsonDict]
) -> Handler:
    async def verify(request: Request) -> Response:
        body = await json_object(request)
        if is_evaluator_verify(body):
            require(body, "response", str, "the model's answer text")
            session_id = signer.from_request(request)
            try:
                task = (
                    client.sessions.get(session_id).task
                    if session_id
                    else evaluator_task(body, dataset)
                )
            except SessionExpired as expired:
                raise RequestError(404, str(expired), param="session") from None
            fields = await _score(client, session_id, task, text_response(body["response"]))
            return JSONResponse(evaluator_answer(body, fields))
        require(body, "response", dict, "an OpenAI Response object")
        task = {k: v for k, v in body.items() if k != "response"}
        fields = await _score(client, signer.from_request(request), task, body["response"])
        return JSONResponse({**body, **fields})

    return verify


async def _score(
    client: LocalEnvironmentClient, session_id: str | None, task: JsonDict, response: JsonDict
) -> JsonDict:
    """Verify in the caller's session, or in a fresh one when it sent none."""
    owned = session_id is None  # no session: score the trajectory in a fresh one
    if owned:
        session_id = await client.seed(task)
    assert session_id is not None
    try:
        verdict = await client.verify(session_id, task, response)
    except SessionExpired as expired:
        raise RequestError(404, str(expired), param="session") from None
    finally:
        if owned:
            await client.close(session_id)
    return verdict_fields(verdict)


def verdict_fields(verdict: Verdict) -> JsonDict:
    """A verdict as verify-answer fields; a failure is explicit, beside a placeholder reward."""
    fields = verdict.to_fields()
    if verdict.failure is not None:
        fields["failure"] = verdict.failure.to_json()
    return fields


def _reset(client: LocalEnvironmentClient, signer: SessionSigner) -> Handler:
    """``POST /reset`` (palaestra's turn-based extension): the first observation."""

    async def reset(request: Request) -> Response:
        session_id = _session_of(request, signer)
        return JSONResponse({"observation": await client.reset(session_id)})

    return reset


def _step(client: LocalEnvironmentClient, signer: SessionSigner) -> Handler:
    """``POST /step`` with ``{"action": text}``: observation, reward, terminated, truncated."""

    async def step(request: Request) -> Response:
        body = await json_object(request)
        require(body, "action", str, "the model's text")
        session_id = _session_of(request, signer)
        return JSONResponse((await client.step(session_id, body["action"])).to_json())

    return step


def _close(client: LocalEnvironmentClient, signer: SessionSigner) -> Handler:
    async def close(request: Request) -> Response:
        session_id = signer.from_request(request)
        if session_id is not None:
            await client.close(session_id)
        response = JSONResponse({})
        response.delete_cookie(COOKIE_NAME)
        return response

    return close


async def aggregate_endpoint(request: Request) -> Response:
    """``POST /aggregate_metrics``: NeMo Gym's aggregate of a list of verify answers."""
    body = await json_object(request)
    require(body, "verify_responses", list, "a list of verify answers")
    rows: list[Any] = body["verify_responses"]
    for position, row in enumerate(rows):
        if not isinstance(row, dict):
            raise RequestError(422, "must be an object", param=f"verify_responses[{position}]")
    # One group over every row, whatever agent produced it, as NeMo Gym's endpoint does.
    aggregates = list(aggregate_rows({**row, "agent_ref": {}} for row in rows).values())
    if not aggregates:
        return JSONResponse({"agent_metrics": {}, "key_metrics": {}, "group_level_metrics": []})
    metrics = aggregates[0].to_json()
    metrics.pop("agent_ref")
    return JSONResponse(metrics)


def _session_of(request: Request, signer: SessionSigner) -> str:
    session_id = signer.from_request(request)
    if session_id is None:
        raise RequestError(
            401,
            "no valid session: call /seed_session first and send its "
            f"cookie or the {HEADER_NAME} header",
            param="session",
        )
    return session_id


async def _on_error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, RequestError):
        return request_error_response(exc)
    if isinstance(exc, BodyTooLarge):
        return error_response(413, str(exc))
    if isinstance(exc, RolloutFailure):
        return error_response(500, exc.reason, kind=str(exc.kind))
    return error_response(500, type(exc).__name__)
