"""An ``Environment`` served over HTTP: NeMo Gym's resources-server protocol.

``POST /seed_session`` (the task row) starts a session and sets a signed cookie; the same token
is in the ``x-palaestra-session`` header for clients that keep no cookies. ``POST /<tool>``
runs a tool on the parsed arguments and answers its JSON result. ``POST /verify`` answers the
request plus ``reward`` and the verifier fields; ``POST /close_session`` frees the session.
``POST /aggregate_metrics`` and ``GET /tools`` (palaestra's addition: the tool schemas) round
it off. An environment with a simulated user (``Environment.user_turn``) also answers ``POST
/user_turn`` (``{"conversation": [...]}`` in, ``{"turn": {"text", "done"} | null}`` out) and
says so in ``GET /tools``; its user model (``user_model``) is this server's to lend it.
Validation problems are 422 naming the field; a body that is not JSON is 400.

A request carrying a session token this server does not know (expired, closed, issued before a
restart, forged) is a 404 whose error ``type`` is ``session_lost``: never a fresh, empty
session scored as if it were the rollout's. A request with no token at all is 401 on the session
routes; ``/verify`` without one scores the body's task in a fresh session (re-verification).

A verify that cannot be scored is never an answer a peer reads as a score. In a session (NeMo
Gym's agents and palaestra's clients send the session's cookie or header) it is a 200 carrying
palaestra's ``failure`` and NeMo Gym's ``_ng_failure_class``, which NeMo Gym's agents pass on
to their collector, which files the rollout under failures (its ``BaseVerifyResponse`` needs a
float ``reward``, so a placeholder 0.0 travels beside the failure class). Without a session, in
NeMo Evaluator's form, or when the client asks for it (``x-palaestra-failures: error``: for
clients that read only ``reward``, such as verifiers' taskset) it is a 500: NeMo Evaluator's
client raises on any non-2xx and counts an error. Every exception from the environment's own
code is logged with its traceback.

Live sessions, the size of a seeded task and the total size of the tasks the live sessions hold
are capped (``max_sessions``, ``max_task_bytes``, ``max_total_task_bytes``): a seed over the
session or total cap is a 503 with ``Retry-After``, counted in ``GET /``.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import secrets
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from palaestra.collection.aggregate import verify_answer_metrics
from palaestra.environment.base import Environment, check_tool_names
from palaestra.environment.finding.catalogue import environment_version
from palaestra.environment.running.client import LocalEnvironmentClient
from palaestra.environment.sessions import Session
from palaestra.environment.step import StepEnvironment
from palaestra.errors import RolloutFailure, SessionLost, ToolCallRejected
from palaestra.http.guard import BodyTooLarge
from palaestra.http.json import (
    Handler,
    HotRequest,
    HotRoutedApp,
    JSONResponse,
    RequestError,
    error_response,
    json_object,
    request_error_response,
    require,
    require_objects,
)
from palaestra.http.sessions import SessionSigner, header_of, token_of
from palaestra.observe.metrics_http import environment_metrics, metrics_route
from palaestra.serve.evaluator import (
    PROTOCOL,
    evaluator_answer,
    evaluator_task,
    indexed_task,
    is_evaluator_seed,
    is_evaluator_verify,
    prompt_of,
    task_at,
    text_response,
)
from palaestra.types import Failure, JsonDict, Verdict

if TYPE_CHECKING:
    from palaestra.models.base import Model
from palaestra.wire.protocol import (
    AGGREGATE_METRICS,
    CLOSE_HEADER,
    CLOSE_SESSION,
    CLOSED_HEADER,
    DATASET_SIZE,
    EPISODE_ID,
    FAILURES_HEADER,
    HEALTH,
    LIVENESS,
    NO_ECHO_HEADER,
    RESET,
    RESOURCES_SESSION_ID,
    SEED_HEADER,
    SEED_SESSION,
    SERVER_BUSY,
    SESSION_COOKIE,
    SESSION_HEADER,
    SESSION_LOST,
    STEP,
    TASK_HEADER,
    TOOLS,
    USER_TURN,
    VERIFY,
    failure_error,
    reset_answer,
    step_answer,
    tool_route,
    tools_answer,
    user_turn_answer,
    verdict_fields,
    verify_answer,
)

logger = logging.getLogger("palaestra.serve")

DEFAULT_MAX_SESSIONS = 32_768
"""Live sessions one server holds. A collector holds one per rollout in flight and closes it at
the end; a run killed and resumed leaves its in-flight sessions to expire (one session TTL)
beside the new ones, so a 10,000-in-flight run can briefly need 20,000. 32,768 leaves room for
that; what the sessions' tasks may weigh is bounded by ``DEFAULT_MAX_TOTAL_TASK_BYTES``."""
DEFAULT_MAX_TASK_BYTES = 1024 * 1024
"""The largest task (the ``/seed_session`` body) a session may hold: a 128k-token prompt is
about 512 KB of JSON. Larger seeds are a 413 naming the limit."""
DEFAULT_MAX_TOTAL_TASK_BYTES = 256 * 1024 * 1024
"""The bytes of task JSON the live sessions may hold together. A task costs the server about
one byte of memory per byte of JSON (measured: 5,000 x 100 KB grew it 483 MB), so this bounds
what seeding can grow a server by to about 256 MB, which a 2-core machine with a few GB free
survives, where the two caps above alone allowed 32 GB. It still holds 10,000 rollouts of
26 KB tasks in flight, or 512 of 512 KB (128k-token prompts); a larger run raises it
(``--max-total-task-bytes``)."""
RETRY_AFTER_SECONDS = 1
"""What a refused seed is told to wait: sessions free as rollouts finish, within seconds."""

# The session's headers, written by hand (cheaper than http.cookies, and paid on every seed):
# the cookie as Starlette's set_cookie(httponly=True, samesite="lax") writes it, and its
# deletion.
_SESSION_HEADER = SESSION_HEADER.encode()
_FAILURES_HEADER = FAILURES_HEADER.encode()
_CLOSE_HEADER = CLOSE_HEADER.encode()
_NO_ECHO_HEADER = NO_ECHO_HEADER.encode()
_SEED_HEADER = SEED_HEADER.encode()
_TASK_HEADER = TASK_HEADER.encode()
_SESSION_HEADERS = (_SESSION_HEADER, b"set-cookie")
_CLOSED = (CLOSED_HEADER.encode(), b"1")
_COOKIE_PREFIX = f"{SESSION_COOKIE}=".encode()
_COOKIE_ATTRIBUTES = b"; HttpOnly; Path=/; SameSite=lax"
_DELETE_COOKIE = (
    b"set-cookie",
    f'{SESSION_COOKIE}=""; expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0; Path=/; '
    "SameSite=lax".encode(),
)


def environment_app(
    environment: Environment,
    *,
    secret: bytes | None = None,
    dataset: list[JsonDict] | None = None,
    max_sessions: int | None = DEFAULT_MAX_SESSIONS,
    max_task_bytes: int | None = DEFAULT_MAX_TASK_BYTES,
    max_total_task_bytes: int | None = DEFAULT_MAX_TOTAL_TASK_BYTES,
    user_model: Model | None = None,
) -> HotRoutedApp:
    """An ASGI app serving ``environment``; sessions live in this process and expire.

    ``dataset`` is the task list NeMo Evaluator's clients address by index. ``max_sessions``
    caps the live sessions and ``max_total_task_bytes`` the bytes of their tasks together (a
    seed over either is a 503 with ``Retry-After``); ``max_task_bytes`` caps the size of one
    seeded task (413). ``None`` lifts a cap. ``user_model`` is lent to the environment's
    simulated user (its context's ``user_model``); the caller closes it.
    """
    tasks = dataset or []
    check_tool_names(type(environment).__name__, environment.tool_specs)  # if set by hand
    client = LocalEnvironmentClient(environment, user_model=user_model)
    signer = SessionSigner(secret or secrets.token_bytes(32))
    caps = SessionCaps(max_sessions, max_task_bytes, max_total_task_bytes)
    seed = _seed(client, signer, tasks, caps)
    session_routes: dict[str, Handler] = {VERIFY: _verify(client, signer, tasks)}
    session_routes.update(
        {tool_route(name): _tool(client, signer, name) for name in environment.tool_specs}
    )
    if isinstance(environment, StepEnvironment):
        session_routes.update({RESET: _reset(client, signer), STEP: _step(client, signer)})
    if client.has_user:
        session_routes[USER_TURN] = _user_turn(client, signer)
    # The routes a rollout crosses, answered without Starlette's router (HotRoutedApp). A
    # session route may seed its session first (SEED_HEADER): one exchange instead of two;
    # the app, made below, answers what each part raises as that part's own route would.
    hot: dict[str, Handler] = {
        SEED_SESSION: seed,
        CLOSE_SESSION: _close(client, signer),
        **{
            path: _seeding(seed, handler, lambda: app, client, signer)
            for path, handler in session_routes.items()
        },
    }
    routes = [
        Route(LIVENESS, _health(client, caps), methods=["GET"]),
        Route(TOOLS, _tools(client), methods=["GET"]),
        Route(HEALTH, _evaluator_health(environment.name, tasks), methods=["GET"]),
        Route(DATASET_SIZE, _dataset_size(tasks), methods=["GET"]),
        Route(AGGREGATE_METRICS, aggregate_endpoint, methods=["POST"]),
        metrics_route(environment_metrics(client, caps)),
    ]
    routes += [Route(path, handler, methods=["POST"]) for path, handler in hot.items()]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await client.aclose()  # sessions, the environment's own resources, its worker pool

    app = HotRoutedApp(
        hot=hot,
        lifespan=lifespan,
        routes=routes,
        exception_handlers={
            RequestError: _on_error,
            RolloutFailure: _on_error,  # a SessionLost too (404), the rest logged (500)
            BodyTooLarge: _on_error,
            ToolCallRejected: _on_error,
        },
    )
    app.state.client = client
    app.state.caps = caps
    return app


class SessionCaps:
    """The session limits of one server, and how many seeds they refused."""

    def __init__(
        self,
        max_sessions: int | None,
        max_task_bytes: int | None,
        max_total_task_bytes: int | None = None,
    ) -> None:
        for name, value in (
            ("max_sessions", max_sessions),
            ("max_task_bytes", max_task_bytes),
            ("max_total_task_bytes", max_total_task_bytes),
        ):
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1 (or None for no cap), got {value}")
        self.max_sessions = max_sessions
        self.max_task_bytes = max_task_bytes
        self.max_total_task_bytes = max_total_task_bytes
        self.refused = 0
        self.seeding_bytes = 0
        """Bytes of the tasks admitted and still being seeded (not yet in a session)."""

    async def admit(self, request: Request, client: LocalEnvironmentClient) -> int:
        """Refuse a seed whose task is too big (413) or that would pass the session or total
        cap (503); else reserve its size (``release`` it once seeded) and return it."""
        size = len(await request.body())
        for cap, name in (
            (self.max_task_bytes, "max_task_bytes"),
            (self.max_total_task_bytes, "max_total_task_bytes"),
        ):
            if cap is not None and size > cap:
                raise RequestError(
                    413,
                    f"the task is {size} bytes, over this server's {name} ({cap})",
                    param="body",
                )
        if self._full(client, size):
            # Expired sessions are swept by the next seed; a full server sees no next seed, so
            # sweep here (only at a cap: an O(expired) walk, not per request).
            for expired in client.sessions.sweep():
                await _close_quietly(client, expired)
        if self._full(client, size):
            self.refused += 1
            raise RequestError(
                503,
                f"{self._busy(client, size)}; retry after one closes",
                kind=SERVER_BUSY,
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            )
        self.seeding_bytes += size
        return size

    def release(self, size: int) -> None:
        """The reservation of an admitted seed, once it is a session (or failed)."""
        self.seeding_bytes -= size

    def _busy(self, client: LocalEnvironmentClient, size: int) -> str:
        held = len(client.sessions)
        if self.max_sessions is not None and held >= self.max_sessions:
            return f"this server holds {held} sessions, its max_sessions"
        return (
            f"this server's {held} sessions hold "
            f"{client.sessions.held_bytes + self.seeding_bytes} bytes of tasks: a task of "
            f"{size} more would pass its max_total_task_bytes ({self.max_total_task_bytes})"
        )

    def _full(self, client: LocalEnvironmentClient, size: int) -> bool:
        sessions = client.sessions
        if self.max_sessions is not None and len(sessions) >= self.max_sessions:
            return True
        total = self.max_total_task_bytes
        return total is not None and sessions.held_bytes + self.seeding_bytes + size > total


async def _close_quietly(client: LocalEnvironmentClient, session: Session) -> None:
    with contextlib.suppress(Exception):  # an expired session's close must not fail a seed
        close: Callable[[Session], object] = client.environment.close  # sync or async
        closed = close(session)
        if inspect.isawaitable(closed):
            await closed


def _health(client: LocalEnvironmentClient, caps: SessionCaps) -> Handler:
    async def health(request: Request) -> Response:
        return JSONResponse(
            {
                "status": "ok",
                "sessions": len(client.sessions),
                "max_sessions": caps.max_sessions,
                "max_task_bytes": caps.max_task_bytes,
                "task_bytes": client.sessions.held_bytes,
                "max_total_task_bytes": caps.max_total_task_bytes,
                "refused_sessions": caps.refused,
            }
        )

    return health


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
    version = environment_version(type(client.environment))

    async def tools(request: Request) -> Response:
        answer = tools_answer(
            client.tools(),
            client.environment.default_agent,
            user=client.has_user,
            version=version,
            ending=client.ending_tools,
        )
        return JSONResponse(answer)

    return tools


def _seed(
    client: LocalEnvironmentClient,
    signer: SessionSigner,
    dataset: list[JsonDict],
    caps: SessionCaps,
) -> Handler:
    async def seed(request: Request) -> Response:
        size = await caps.admit(request, client)
        try:
            task = await json_object(request)
            answer: JsonDict = {}
            if is_evaluator_seed(task):  # NeMo Evaluator: only an index into our task list
                idx, task = task_at(dataset, task)
                answer = prompt_of(idx, task)
                if header_of(request, _TASK_HEADER) == "1":  # palaestra's client: the row
                    answer["task"] = task
            session_id = await client.seed(task)  # a failure: logged and answered by _on_error
        finally:
            caps.release(size)
        client.sessions.charge(session_id, size)
        token = signer.token(session_id)
        response = JSONResponse(answer)
        encoded = token.encode()  # [0-9a-f.]: nothing to quote in a header or a cookie
        response.raw_headers += [
            (_SESSION_HEADER, encoded),
            (b"set-cookie", _COOKIE_PREFIX + encoded + _COOKIE_ATTRIBUTES),
        ]
        return response

    return seed


def _seeding(
    seed: Handler,
    handler: Handler,
    app: Callable[[], HotRoutedApp],
    client: LocalEnvironmentClient,
    signer: SessionSigner,
) -> Handler:
    """``handler``, which first seeds a session from the body's head when the request carries
    ``SEED_HEADER`` (see ``palaestra.wire.protocol``), and then runs in that session.

    A route that raises what no exception handler maps (a bare 500, without the session's
    token) closes the session it seeded first: its client never learns the token, so nothing
    else would close it before its TTL.
    """

    async def route(request: Request) -> Response:
        size = header_of(request, _SEED_HEADER)
        if size is None:
            return await handler(request)
        body = await request.body()
        cut = int(size) if size.isdigit() else -1
        if not 0 <= cut <= len(body):
            raise RequestError(
                400, f"{SEED_HEADER} must be a byte count within the body", param=SEED_HEADER
            )
        respond = app().respond
        seeded = await respond(seed, _part(request, SEED_SESSION, body[:cut]))
        session = next((h for h in seeded.raw_headers if h[0] == _SESSION_HEADER), None)
        if session is None:  # refused or failed: the seed's answer, and the route never ran
            return seeded
        try:
            answer = await respond(handler, _part(request, None, body[cut:], session))
        except Exception:
            await _close_unanswered(client, signer.session_id(session[1].decode()))
            raise
        answer.raw_headers += [h for h in seeded.raw_headers if h[0] in _SESSION_HEADERS]
        return answer

    return route


async def _close_unanswered(client: LocalEnvironmentClient, session_id: str | None) -> None:
    """Close a session whose seeding call raised; best effort, as what it raised is the news."""
    if session_id is not None:
        with contextlib.suppress(Exception):
            await client.close(session_id)


def _part(
    request: Request, path: str | None, body: bytes, header: tuple[bytes, bytes] | None = None
) -> HotRequest:
    """One part of a seeding request, as if it had come on its own."""
    scope = dict(request.scope)
    if path is not None:
        scope["path"] = path
    if header is not None:
        scope["headers"] = [header, *scope["headers"]]
    part = HotRequest(scope, request.receive)
    part._body = body
    return part


def _tool(client: LocalEnvironmentClient, signer: SessionSigner, name: str) -> Handler:
    async def call(request: Request) -> Response:
        arguments = await json_object(request)
        session_id = _session_of(request, signer)
        return JSONResponse(await client.call_tool_value(session_id, name, arguments))

    return call


def _verify(
    client: LocalEnvironmentClient, signer: SessionSigner, dataset: list[JsonDict]
) -> Handler:
    indexed = {id(row) for row in dataset}  # tasks a /seed_session {idx} seeds sessions with

    async def verify(request: Request) -> Response:
        body = await json_object(request)
        evaluator = is_evaluator_verify(body)
        if evaluator:
            require(body, "response", str, "the model's answer text")
            task, response = evaluator_task(body, dataset), text_response(body["response"])
        else:
            require(body, "response", dict, "an OpenAI Response object")
            task = {k: v for k, v in body.items() if k != "response"}
            response = body["response"]
        session_id = _token_session(request, signer)
        no_echo = header_of(request, _NO_ECHO_HEADER) == "1"  # the body names no task
        if session_id is not None and not no_echo:
            session = client.sessions.get(session_id)  # a lost session: 404 session_lost
            if id(session.task) in indexed:
                # Seeded by index (NeMo Evaluator): a cookie-keeping client sends the cookie of
                # its latest seed with every verify, so the body, not the cookie, names the task.
                named = task if evaluator else indexed_task(body, dataset)
                if named is not session.task:
                    session_id, task = None, named or task
        verdict = await _score(client, session_id, task, response)
        as_error = header_of(request, _FAILURES_HEADER) == "error"
        if verdict.failure is not None and (evaluator or session_id is None or as_error):
            return JSONResponse(failure_error(verdict.failure), status_code=500)
        if evaluator:
            return JSONResponse(evaluator_answer(body, verdict_fields(verdict)))
        closing = session_id is not None and header_of(request, _CLOSE_HEADER) == "1"
        if closing:
            verdict = await _close_after(client, session_id, verdict)
        # In a session, a failure is the answer an agent passes on as its rollout row.
        answer = JSONResponse(verify_answer({} if no_echo and session_id else body, verdict))
        if closing:
            answer.raw_headers.append(_CLOSED)
        return answer

    return verify


async def _score(
    client: LocalEnvironmentClient, session_id: str | None, task: JsonDict, response: JsonDict
) -> Verdict:
    """Verify in the caller's session, or in a fresh one; a failure is a failed verdict."""
    try:
        if session_id is not None:
            return await client.verify(session_id, task, response)
        session_id = await client.seed(task)  # no session: score the trajectory in a fresh one
        try:
            return await client.verify(session_id, task, response)
        finally:
            await client.close(session_id)
    except RolloutFailure as failure:
        _log_failure(VERIFY, failure)
        return Verdict(failure=Failure(failure.kind, failure.reason))


async def _close_after(
    client: LocalEnvironmentClient, session_id: str | None, verdict: Verdict
) -> Verdict:
    """Close the session a verify ran in, as its client asked; a failure of the environment's
    close fails the rollout, as the same failure would from ``/close_session``."""
    assert session_id is not None
    try:
        await client.close(session_id)
    except RolloutFailure as failure:
        _log_failure(CLOSE_SESSION, failure)
        if verdict.failure is None:
            return Verdict(failure=Failure(failure.kind, failure.reason))
    return verdict


def _log_failure(where: str, failure: RolloutFailure) -> None:
    """Log a failure of the environment's own code with the traceback of what it raised.

    The failure's ``__cause__`` is the environment's exception: its traceback names the
    environment's file and line, which the client only sees as a one-line reason.
    """
    cause = failure.__cause__
    if cause is not None:
        logger.error("%s failed: %s", where, failure.reason, exc_info=cause)
    else:
        logger.error("%s failed: %s", where, failure.reason)


def _reset(client: LocalEnvironmentClient, signer: SessionSigner) -> Handler:
    """``POST /reset`` (palaestra's turn-based extension): the first observation."""

    async def reset(request: Request) -> Response:
        session_id = _session_of(request, signer)
        return JSONResponse(reset_answer(await client.reset(session_id)))

    return reset


def _step(client: LocalEnvironmentClient, signer: SessionSigner) -> Handler:
    """``POST /step`` with ``{"action": text}``: observation, reward, terminated, truncated."""

    async def step(request: Request) -> Response:
        body = await json_object(request)
        require(body, "action", str, "the model's text")
        session_id = _session_of(request, signer)
        return JSONResponse(step_answer(await client.step(session_id, body["action"])))

    return step


def _user_turn(client: LocalEnvironmentClient, signer: SessionSigner) -> Handler:
    """``POST /user_turn`` with ``{"conversation": [...]}``: the simulated user's turn. A user
    model that failed is a 500 carrying ``user_model_error`` (``_on_error``)."""

    async def user_turn(request: Request) -> Response:
        body = await json_object(request)
        require(body, "conversation", list, "the trajectory so far (Responses items)")
        session_id = _session_of(request, signer)
        turn = await client.user_turn(session_id, body["conversation"])
        return JSONResponse(user_turn_answer(None if turn is None else (turn.text, turn.done)))

    return user_turn


def _close(client: LocalEnvironmentClient, signer: SessionSigner) -> Handler:
    """``POST /close_session``: the session the token (cookie or header) names is closed.

    The body is ``{}`` (answered ``{}``; a session the server no longer knows is a 404
    ``session_lost``), or the newest NeMo Gym's ``{resources_session_id, episode_id}``
    (answered ``{resources_session_id}``; a close of a session already closed, or of none,
    succeeds, as that protocol requires of a close the caller may repeat).
    """

    async def close(request: Request) -> Response:
        named = _closed_name(await json_object(request) if await request.body() else {})
        session_id = _token_session(request, signer)
        if session_id is not None:
            try:
                client.sessions.get(session_id)  # a lost session: 404 session_lost
            except SessionLost:
                if named is None:
                    raise
            else:
                await client.close(session_id)
        response = JSONResponse({} if named is None else {RESOURCES_SESSION_ID: named})
        response.raw_headers.append(_DELETE_COOKIE)
        return response

    return close


def _closed_name(body: JsonDict) -> str | None:
    """The ``resources_session_id`` of a close in the newest NeMo Gym's form (422 naming the
    field when that form is wrong); None for any other body, as before it was read."""
    if RESOURCES_SESSION_ID not in body and EPISODE_ID not in body:
        return None
    named = body.get(RESOURCES_SESSION_ID)
    if not isinstance(named, str) or not named:
        raise RequestError(
            422, f"field '{RESOURCES_SESSION_ID}' must be a non-empty string",
            param=RESOURCES_SESSION_ID,
        )  # fmt: skip
    episode = body.get(EPISODE_ID)
    rollout = episode.get("rollout_id") if isinstance(episode, dict) else None
    if not isinstance(rollout, str) or not rollout:
        raise RequestError(
            422, f"field '{EPISODE_ID}' must be an object with a non-empty 'rollout_id' string",
            param=EPISODE_ID,
        )  # fmt: skip
    return named


async def aggregate_endpoint(request: Request) -> Response:
    """``POST /aggregate_metrics``: NeMo Gym's aggregate of a list of verify answers."""
    body = await json_object(request)
    answers = require_objects(body, "verify_responses", "a list of verify answers")
    return JSONResponse(verify_answer_metrics(answers))


def _token_session(request: Request, signer: SessionSigner) -> str | None:
    """The session id the request's token names; None without a token, 404 if it is forged."""
    token = token_of(request)
    if not token:
        return None
    session_id = signer.session_id(token)
    if session_id is None:
        raise RequestError(
            404,
            "the session token was not issued by this server (forged, or from before a "
            "restart): the session is lost",
            param="session",
            kind=SESSION_LOST,
        )
    return session_id


def _session_of(request: Request, signer: SessionSigner) -> str:
    session_id = _token_session(request, signer)
    if session_id is None:
        raise RequestError(
            401,
            "no valid session: call /seed_session first and send its "
            f"cookie or the {SESSION_HEADER} header",
            param="session",
        )
    return session_id


async def _on_error(request: Request, exc: Exception) -> Response:
    """The one mapping from what a route raised to its answer (the failures are logged here)."""
    if isinstance(exc, RequestError):
        return request_error_response(exc)
    if isinstance(exc, SessionLost):
        return error_response(404, exc.reason, param="session", kind=SESSION_LOST)
    if isinstance(exc, ToolCallRejected):
        return error_response(422, str(exc))
    if isinstance(exc, BodyTooLarge):
        return error_response(413, str(exc))
    if isinstance(exc, RolloutFailure):
        _log_failure(request.url.path.lstrip("/"), exc)
        return JSONResponse(failure_error(Failure(exc.kind, exc.reason)), status_code=500)
    return error_response(500, type(exc).__name__)
