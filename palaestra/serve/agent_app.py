"""An agent served over HTTP: NeMo Gym's agent-server protocol.

``POST /run`` takes a task row and answers one finished rollout: the verify answer
(``responses_create_params``, ``response``, ``reward``, task and verifier fields). A rollout
that could not be scored is a 200 row with no ``reward``, carrying palaestra's ``failure`` and
NeMo Gym 0.4's ``_ng_failure_class`` (and ``_ng_failure_terminal``): the form NeMo Gym's own
agents give a failed rollout. NeMo Gym's collector files it under failures (a non-2xx would
stop its whole run), and palaestra's ``RemoteAgent`` records the failure.
``POST /v1/responses`` runs the tool loop on create params and answers the whole trajectory as
one Open Responses ``Response`` (the agent seen as a model), or with ``"stream": true`` the same
Response as the spec's server-sent events once the rollout has ended
(``palaestra.wire.open_responses``). ``POST /aggregate_metrics`` aggregates verify answers.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from palaestra.agents.base import Agent, scoped
from palaestra.agents.context import RolloutContext
from palaestra.collection.aggregate import verify_answer_metrics
from palaestra.collection.tasks import task_problem
from palaestra.environment.running.client import EnvironmentClient
from palaestra.errors import InputError, ServiceUnreachable
from palaestra.http.guard import BodyTooLarge
from palaestra.http.json import (
    HotRoutedApp,
    JSONResponse,
    RequestError,
    error_response,
    json_object,
    request_error_response,
    require_objects,
)
from palaestra.http.sessions import header_of
from palaestra.models.affinity import RolloutScope
from palaestra.models.base import Model
from palaestra.observe.metrics_counts import ObservedAgent
from palaestra.observe.metrics_http import agent_metrics, metrics_route
from palaestra.types import Failure, FailureKind, JsonDict
from palaestra.wire.open_responses import conform, event_stream, refuse_unserved, take_stream
from palaestra.wire.protocol import (
    AGGREGATE_METRICS,
    LIVENESS,
    NO_ECHO_HEADER,
    RESPONSES,
    RUN,
    agent_health,
    failure_error,
    run_answer,
)
from palaestra.wire.rows import PARAMS

_NO_ECHO_HEADER = NO_ECHO_HEADER.encode()


def agent_app(
    agent: Agent, env: EnvironmentClient, model: Model, *, closed_book: bool | None = None
) -> Starlette:
    """An ASGI app running ``agent`` against ``env`` and ``model`` for each request.

    ``closed_book``: whether ``model`` is a closed-book route (``palaestra.models.closed_book``);
    each ``/run`` row then says so, as a row collected in process does. None: not said."""
    agent = ObservedAgent(agent)  # counts its rollouts for /metrics (a few counters a request)

    async def health(request: Request) -> Response:
        return JSONResponse(agent_health(agent.name, env.name))

    async def run(request: Request) -> Response:
        task = await json_object(request)
        _check_task(task)
        with RolloutScope() as scope:  # one rollout: a model pool keeps it on one endpoint
            result = await agent.run(task, env, model, RolloutContext(scope=scope))
        scoped(result, scope, closed_book)  # the endpoints, versions, closed-book: as in process
        echoed = {} if header_of(request, _NO_ECHO_HEADER) == "1" else task
        return JSONResponse(run_answer(echoed, result))

    async def responses(request: Request) -> Response:
        params = await json_object(request)
        try:
            stream = take_stream(params)
            refuse_unserved(params)
        except InputError as error:
            raise RequestError(422, error.describe(), param=error.field) from None
        _check_task({PARAMS: params})
        with RolloutScope() as scope:
            result = await agent.run({PARAMS: params}, env, model, RolloutContext(scope=scope))
        if result.response is None:
            failure = result.failure or Failure(FailureKind.INTERNAL_ERROR, "no response")
            return error_response(502, failure.reason, kind=str(failure.kind))
        response = result.response if result.conformed else conform(result.response, params)
        if stream:
            return Response(event_stream(response), media_type="text/event-stream")
        return JSONResponse(response)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await env.aclose()
        await model.aclose()

    return HotRoutedApp(
        hot={RUN: run},  # a rollout's one request: without Starlette's router
        lifespan=lifespan,
        routes=[
            Route(LIVENESS, health, methods=["GET"]),
            Route(RUN, run, methods=["POST"]),
            Route(RESPONSES, responses, methods=["POST"]),
            Route(AGGREGATE_METRICS, aggregate_endpoint, methods=["POST"]),
            metrics_route(agent_metrics(agent, env, model)),
        ],
        exception_handlers={
            RequestError: _on_error,
            BodyTooLarge: _on_error,
            ServiceUnreachable: _unreachable,  # not the rollout's fault: the caller may stop
        },
    )


async def aggregate_endpoint(request: Request) -> Response:
    """``POST /aggregate_metrics``: NeMo Gym's aggregate of a list of verify answers."""
    body = await json_object(request)
    answers = require_objects(body, "verify_responses", "a list of verify answers")
    return JSONResponse(verify_answer_metrics(answers))


async def _unreachable(request: Request, exc: Exception) -> Response:
    """A 503 carrying the failure: the model or environment this agent needs is unreachable.

    palaestra's ``RemoteAgent`` raises it again (its collector stops the run after a few);
    NeMo Gym's collector stops on any non-2xx, as it should when a service is gone.
    """
    assert isinstance(exc, ServiceUnreachable)
    body = failure_error(Failure(exc.kind, exc.reason))
    return JSONResponse(body, status_code=503, headers={"Retry-After": "1"})


def _check_task(task: JsonDict) -> None:
    problem = task_problem(task)
    if problem is not None:
        field, reason = problem
        raise RequestError(422, f"{field}: {reason}" if field else reason, param=field)


async def _on_error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, RequestError):
        return request_error_response(exc)
    return error_response(413, str(exc))
