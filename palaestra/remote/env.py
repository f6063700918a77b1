"""``RemoteEnvironmentClient``: an environment behind NeMo Gym's resources-server protocol.

It speaks to a palaestra environment server or to a NeMo Gym resources server alike. Each
session keeps its own cookies (NeMo Gym keys sessions by a cookie), sent by hand so that
concurrent rollouts sharing one connection pool never see each other's cookies.

What is retried, within the ``RetryPolicy`` budget (the model clients' backoff): a call whose
connection could not be made (nothing was sent, so nothing can run twice); a seed the server
turned away as busy (502/503/504, honouring ``Retry-After``) or whose connection dropped (a
second seed only costs a session that expires); a palaestra server's 503 to a call that carries
its session's seed (``SEED_HEADER``: the seed was refused, the call never ran). Nothing else: a
tool may have side effects, and running it twice would change the rollout. A server still
unreachable after the budget is an ``EnvironmentUnreachable`` (the collector stops the run,
resumable). A session the server no longer knows (restarted, expired, forged token: a 404 of
type ``session_lost``) is a ``SessionLost`` failure, never a fresh session scored as if it were
the rollout's.

What a call raised is mapped once, by a ``Boundary`` per call
(``palaestra.environment.running.boundary``): a transport timeout is the call's timeout
failure, any other transport error its failure. A failure the server answered (``failure``
fields in a non-2xx body) keeps its kind. The wire names and codecs are
``palaestra.wire.protocol``'s, shared with the server; no web framework is imported here.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import secrets
from http.cookies import SimpleCookie

import orjson

from palaestra.environment.running.boundary import Boundary, describe
from palaestra.environment.users import UserTurn
from palaestra.errors import (
    ConfigError,
    EnvironmentFailure,
    EnvironmentTimeout,
    EnvironmentUnreachable,
    RolloutFailure,
    SessionLost,
    ToolCallRejected,
    ToolFailure,
    ToolTimeout,
    VerifierFailure,
    VerifierTimeout,
)
from palaestra.models.openai.retry import RetryPolicy
from palaestra.transport import (
    ConnectFailed,
    FramedHeaders,
    HttpAnswer,
    HttpClient,
    TransportError,
    shown_url,
)
from palaestra.types import JsonDict, StepResult, ToolOutput, Verdict, content_parts
from palaestra.wire.protocol import (
    CLOSE_HEADER,
    CLOSE_SESSION,
    CLOSED_HEADER,
    HEALTH,
    LIVENESS,
    NO_ECHO_HEADER,
    RESENDABLE_ROUTES,
    RESET,
    RESOURCES_SESSION_ID,
    SEED_HEADER,
    SEED_SESSION,
    SESSION_HEADER,
    SESSION_LOST,
    STEP,
    TOOLS,
    USER_TURN,
    VERIFY,
    close_fields,
    ending_tools_of,
    error_of,
    failure_from_fields,
    has_user_turn,
    observation_of,
    seeds_with_first_call,
    step_from_answer,
    tool_route,
    tools_of,
    typed_close_body,
    user_turn_of,
    verdict_from_answer,
    version_of,
)

__all__ = ["RemoteEnvironmentClient", "verdict_from_answer"]

LIVENESS_ROUTES = (LIVENESS, HEALTH)
"""The routes that say an environment server is up, in the order they are tried."""
OPENAPI = "/openapi.json"
"""Where a FastAPI server (NeMo Gym's, ``nel serve``) lists its routes (``GET``)."""
_CONNECT_SECONDS = 10.0
_ANSWER_SECONDS = 300.0
_BUSY_STATUSES = frozenset({502, 503, 504})
"""Answers to a seed that are retried: the server (or a proxy before it) had no room."""
_REFUSED_STATUSES = frozenset({503})
"""Answers to a call seeding its session that are retried: the server's own refusal (a proxy's
502 or 504 may hide a call that ran)."""
_NONE: frozenset[int] = frozenset()


class RemoteEnvironmentClient:
    """The ``EnvironmentClient`` interface over HTTP. Create it with ``await connect(url)``.

    An ``http`` client passed in is borrowed (it keeps no cookies: each session's are sent
    here by hand); otherwise the environment client owns one and closes it in ``aclose``.
    """

    def __init__(
        self,
        base_url: str,
        *,
        http: HttpClient | None = None,
        name: str = "remote",
        tools: list[JsonDict] | None = None,
        token: str | None = None,
        retry: RetryPolicy | None = None,
        seed_with_first_call: bool = True,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._shown = shown_url(self.base_url)
        """The server as messages name it (a Unix socket as ``unix:/path``)."""
        self.name = name
        self.default_agent = "tool_calling"
        """The agent the served environment asks for (a NeMo Gym server: tool_calling)."""
        self.has_user = False
        """Whether the server announced a simulated user (``/user_turn``)."""
        self.ending_tools: frozenset[str] = frozenset()
        """The tools the server announced end the episode when called (``submit``)."""
        self.restorable = False
        """A served environment's state stays on its server: its rollouts do not checkpoint."""
        self.version: int | None = None
        """The environment's version the server announced (a palaestra server's ``/tools``)."""
        self._owns_http = http is None
        self._http = http or HttpClient()  # no connection cap: --concurrency is the bound
        self._tools = tools or []
        self._retry = retry or RetryPolicy()
        self._auth = {"Authorization": f"Bearer {token}"} if token else {}
        self._post_headers = {"Content-Type": "application/json", **self._auth}
        self._cookies: dict[str, dict[str, str]] = {}
        """Each session's cookies, for servers that key sessions by cookie (NeMo Gym's)."""
        self._headers: dict[str, dict[str, str] | FramedHeaders] = {}
        """Each session's request headers (a palaestra server's token, framed once)."""
        self._boundaries: dict[str, Boundary] = {}
        self._seeds_along = False
        """Whether seeds go with each session's first call (the server said it takes them)."""
        self._no_echo = False
        """Whether a verify in a token session sends the response alone and asks for the
        verdict alone (``NO_ECHO_HEADER``): a palaestra server, which says so in /tools."""
        self._may_seed_along = seed_with_first_call
        self._closes = True
        """Whether sessions are closed with ``/close_session``: learned by ``connect`` (a
        server that does not announce the route is sent none); a client made without it
        closes, as one of a palaestra server must."""
        self._typed_close = False
        """Whether the close body is the newest NeMo Gym's ``{resources_session_id,
        episode_id}`` (its ``GET /openapi.json`` asks for them) rather than ``{}``."""
        self._unsent: dict[str, bytes] = {}
        """The task of each session not seeded yet, to go with its first call."""
        self._seeding: dict[str, asyncio.Event] = {}
        """Sessions whose first call is on its way (set when it has answered)."""
        # Local session handles: a random prefix and a counter (a getrandom call per seed
        # otherwise); they never leave this client.
        self._handle_prefix = secrets.token_hex(4)
        self._handles = itertools.count(1)

    @classmethod
    async def connect(
        cls,
        base_url: str,
        *,
        http: HttpClient | None = None,
        token: str | None = None,
        retry: RetryPolicy | None = None,
        seed_with_first_call: bool = True,
    ) -> RemoteEnvironmentClient:
        """Check the server is up and learn its tools (a NeMo Gym server lists none).

        A palaestra server takes each session's seed with its first call (``SEED_HEADER``):
        ``seed`` then sends nothing, and what the seed would have raised is raised by that
        call. ``seed_with_first_call=False`` seeds on ``seed``, as with any other server.
        """
        client = cls(
            base_url,
            http=http,
            token=token,
            retry=retry,
            seed_with_first_call=seed_with_first_call,
        )
        try:
            await client._learn_tools()
        except Exception as error:
            await client.aclose()
            if isinstance(error, TransportError | TimeoutError):
                raise ConfigError(
                    f"cannot reach environment server {shown_url(base_url)}: {describe(error)}"
                ) from None
            raise
        return client

    async def _learn_tools(self) -> None:
        """Learn once what kind of server this is, and ask it only what it has.

        A FastAPI server (NeMo Gym's resources servers, ``nel serve``) lists its routes in
        ``GET /openapi.json``: it is asked ``GET /health`` only if it lists it (``nel serve``,
        whose liveness that is), ``GET /tools`` only if it lists it (neither does), and sent
        ``/close_session`` only if it lists it (NeMo Gym 0.4 has none). Any other server is
        asked ``GET /`` (``GET /health`` if it has no ``/``) and ``GET /tools``: a palaestra
        server answers both, and closes sessions.
        """
        document = await self._openapi()
        paths = document.get("paths") if document is not None else None
        routes = frozenset(paths) if isinstance(paths, dict) else None
        if routes is None:
            await self._check_alive()
        elif HEALTH in routes:
            await self._check_alive((HEALTH,))
        self._closes = routes is not None and CLOSE_SESSION in routes
        self._typed_close = document is not None and RESOURCES_SESSION_ID in close_fields(document)
        if routes is not None and TOOLS not in routes:
            return
        listed = await self._get(TOOLS)
        if listed.status != 200:
            return
        try:
            answer = orjson.loads(listed.body)
            self._tools, self.default_agent = tools_of(answer)
        except (orjson.JSONDecodeError, KeyError, TypeError) as error:
            raise ConfigError(f"{self._shown}/tools answered an unusable body: {error}") from None
        self._closes = True  # a palaestra server (its own extension): it has /close_session
        palaestra = seeds_with_first_call(answer)
        self._seeds_along = self._may_seed_along and palaestra
        self._no_echo = palaestra
        self.has_user = has_user_turn(answer)
        self.ending_tools = ending_tools_of(answer)
        self.version = version_of(answer)

    async def _openapi(self) -> JsonDict | None:
        """The ``GET /openapi.json`` document a server serves (every FastAPI app does: its
        ``paths`` list its routes); None when it serves none (a palaestra server)."""
        answer = await self._get(OPENAPI)
        if answer.status != 200:
            return None
        try:
            document = orjson.loads(answer.body)
        except orjson.JSONDecodeError:
            return None
        return document if isinstance(document, dict) else None

    async def _check_alive(self, routes: tuple[str, ...] = LIVENESS_ROUTES) -> None:
        """A liveness route answers below 400: ``GET /`` (palaestra, NeMo Gym), else
        ``GET /health`` (``nel serve`` has no ``/``). Only a 404/405 moves on to the next route,
        so a server with ``/`` costs one GET, as before."""
        answered = []
        for route in routes:
            alive = await self._get(route)
            if alive.status < 400:
                return
            answered.append(f"GET {route}: {alive.status}")
            if alive.status not in (404, 405):
                break
        raise ConfigError(f"environment server {self._shown} answered {', '.join(answered)}")

    async def _get(self, route: str) -> HttpAnswer:
        return await self._http.request(
            "GET",
            f"{self.base_url}{route}",
            headers=self._auth,
            connect_timeout=_CONNECT_SECONDS,
            read_timeout=_CONNECT_SECONDS,
        )

    def tools(self) -> list[JsonDict]:
        return self._tools

    async def seed(self, task: JsonDict) -> str:
        handle = f"{self._handle_prefix}{next(self._handles):x}"
        if self._seeds_along:  # seeded by the session's first call
            self._unsent[handle] = orjson.dumps(task)
            return handle
        await self._seed_session(handle, orjson.dumps(task))
        return handle

    async def _seed_session(self, handle: str, task: bytes) -> None:
        """Seed ``handle``'s session with ``/seed_session`` (``task`` is its JSON)."""
        url = f"{self.base_url}{SEED_SESSION}"
        boundary = self._boundary(SEED_SESSION, url, _SEED)
        response = await self._send(url, task, self._post_headers, boundary, SEED_SESSION)
        if response.status != 200:
            raise _answered(EnvironmentFailure, "seed_session", response.status, response.body)
        token = response.header(SESSION_HEADER)
        if token:  # a palaestra server: the token names the session, no cookie is needed
            self._keep_token(handle, token)
        else:  # NeMo Gym's servers key sessions by cookie
            self._headers[handle] = self._post_headers
            self._cookies[handle] = {}
            self._remember_cookies(handle, response)

    async def call_tool(self, session_id: str, name: str, arguments: JsonDict) -> ToolOutput:
        status, body, _ = await self._post(tool_route(name), arguments, session_id, _TOOL)
        if status == 200:
            return _as_output(body)
        if status == 404:  # no such route (a lost session is raised by _post as SessionLost)
            raise ToolCallRejected(f"unknown tool '{name}'")
        if status in (400, 422):
            raise ToolCallRejected(_error_message(body))
        raise _answered(ToolFailure, f"tool '{name}'", status, body)

    async def verify(self, session_id: str, task: JsonDict, response: JsonDict) -> Verdict:
        closing = self._closing_headers(session_id)  # a token session's, or None
        # A palaestra server scores a token session against its seeded task (seeded along with
        # this call, or before): the task need not travel again, nor come back.
        alone = self._no_echo and (closing is not None or session_id in self._unsent)
        status, body, answer = await self._post(
            VERIFY,
            {"response": response} if alone else {**task, "response": response},
            session_id,
            _VERIFY,
            closing,
        )
        if answer.header(CLOSED_HEADER):  # the server closed the session: no close to send
            self._forget(session_id)
        if status != 200:
            raise _answered(VerifierFailure, "verify", status, body)
        try:
            answer = orjson.loads(body)
            return verdict_from_answer(answer, task)
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as error:
            raise VerifierFailure(f"verify answered an unusable body: {error}") from None

    async def user_turn(self, session_id: str, conversation: list[JsonDict]) -> UserTurn | None:
        """The served environment's user turn (``POST /user_turn``, palaestra's extension);
        None when the server announced no user. A user model that failed on the server comes
        back as its ``user_model_error``."""
        if not self.has_user:
            return None
        body = {"conversation": conversation}
        status, raw, _ = await self._post(USER_TURN, body, session_id, _ENV)
        if status != 200:
            raise _answered(EnvironmentFailure, "user_turn", status, raw)
        try:
            turn = user_turn_of(orjson.loads(raw))
        except (orjson.JSONDecodeError, KeyError, TypeError) as error:
            raise EnvironmentFailure(f"{USER_TURN} answered an unusable body: {error}") from None
        return None if turn is None else UserTurn(*turn)

    async def reset(self, session_id: str) -> str:
        answer = await self._post_ok(RESET, {}, session_id)
        try:
            return observation_of(answer)
        except KeyError:
            raise EnvironmentFailure(f"{RESET} answered no 'observation'") from None

    async def step(self, session_id: str, action: str) -> StepResult:
        answer = await self._post_ok(STEP, {"action": action}, session_id)
        try:
            return step_from_answer(answer)
        except (KeyError, TypeError, ValueError) as error:
            raise EnvironmentFailure(f"{STEP} answered an unusable body: {error}") from None

    async def _post_ok(self, route: str, body: JsonDict, session_id: str) -> JsonDict:
        status, raw, _ = await self._post(route, body, session_id, _ENV)
        if status == 404:
            raise EnvironmentFailure(f"{self._shown} has no {route}: not a turn-based env")
        if status != 200:
            raise _answered(EnvironmentFailure, route, status, raw)
        try:
            answer = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise EnvironmentFailure(f"{route} answered a non-JSON body") from None
        if not isinstance(answer, dict):
            raise EnvironmentFailure(f"{route} answered {type(answer).__name__}, not an object")
        return answer

    async def close(self, session_id: str) -> None:
        if session_id in self._seeding:  # its first call is seeding it: close what it seeds
            await self._seeding[session_id].wait()
        if session_id not in self._headers or not self._closes:
            # Closed by the server after its verify, never seeded on it (no call was made),
            # not a session of this client, or a server with no /close_session.
            self._forget(session_id)
            return
        body = typed_close_body(session_id) if self._typed_close else {}
        try:
            await self._post(CLOSE_SESSION, body, session_id, _ENV)
        finally:
            self._forget(session_id)

    def _closing_headers(self, session_id: str) -> FramedHeaders | None:
        """A token session's headers asking a palaestra server to close it after the verify
        (``CLOSE_HEADER``); None for a cookie session (NeMo Gym's servers)."""
        headers = self._headers.get(session_id)
        if not isinstance(headers, FramedHeaders):
            return None
        closing = headers.adding(CLOSE_HEADER, "1")
        return closing.adding(NO_ECHO_HEADER, "1") if self._no_echo else closing

    def _keep_token(self, handle: str, token: str) -> None:
        """A palaestra server's session: the token names it, no cookie is needed. Framed
        once: llhttp let no line break through, so it frames as it is."""
        self._headers[handle] = FramedHeaders({**self._post_headers, SESSION_HEADER: token})

    def _forget(self, session_id: str) -> None:
        self._cookies.pop(session_id, None)
        self._headers.pop(session_id, None)
        self._unsent.pop(session_id, None)

    async def aclose(self) -> None:
        self._cookies.clear()
        self._headers.clear()
        self._unsent.clear()
        if self._owns_http:
            await self._http.aclose()

    async def _post(
        self,
        route: str,
        body: JsonDict,
        session_id: str | None,
        failures: tuple[type[RolloutFailure], type[RolloutFailure]],
        session_headers: FramedHeaders | None = None,
    ) -> tuple[int, bytes, HttpAnswer]:
        if session_id is not None and self._unsent:
            unsent = self._unsent.pop(session_id, None)
            if unsent is not None:
                return await self._post_seeding(route, body, session_id, failures, unsent)
        if session_id in self._seeding:  # another call of the session is seeding it
            await self._seeding[session_id].wait()
        headers: dict[str, str] | FramedHeaders = self._post_headers
        if session_headers is not None:
            headers = session_headers
        elif session_id is not None:
            headers = self._headers.get(session_id, headers)
            cookies = self._cookies.get(session_id)
            if cookies:  # NeMo Gym's servers: the session's headers are a plain dict
                cookie = "; ".join(f"{k}={v}" for k, v in cookies.items())
                headers = {**self._post_headers, "Cookie": cookie}
        url = f"{self.base_url}{route}"
        boundary = self._boundary(route, url, failures)
        answer = await self._send(url, orjson.dumps(body), headers, boundary, route)
        if session_id is not None:
            if answer.status == 404 and _is_session_lost(answer.body):
                raise SessionLost(f"{shown_url(url)}: {_error_message(answer.body)}")
            self._remember_cookies(session_id, answer)
        return answer.status, answer.body, answer

    async def _post_seeding(
        self,
        route: str,
        body: JsonDict,
        session_id: str,
        failures: tuple[type[RolloutFailure], type[RolloutFailure]],
        task: bytes,
    ) -> tuple[int, bytes, HttpAnswer]:
        """The session's first call, which seeds it (``SEED_HEADER``): the answer's token is
        the session's from then on; an answer without one is the seed's failure."""
        headers = {**self._post_headers, SEED_HEADER: str(len(task))}
        if route == VERIFY:  # as for any token session: the server closes it after scoring
            headers[CLOSE_HEADER] = "1"
            if self._no_echo:
                headers[NO_ECHO_HEADER] = "1"
        url = f"{self.base_url}{route}"
        seeding = self._seeding[session_id] = asyncio.Event()
        try:
            boundary = self._boundary(route, url, failures)
            data = task + orjson.dumps(body)
            answer = await self._send(url, data, headers, boundary, route, seeding=True)
            token = answer.header(SESSION_HEADER)
            if token:
                self._keep_token(session_id, token)
            elif answer.status == 404:
                # No such route (a tool the model made up): nothing ran, not even the seed.
                # The session is seeded on its own and the call made in it, so the model is
                # told of the unknown tool as it would be without seeding (not a failed seed).
                await self._seed_session(session_id, task)
            else:
                raise _answered(EnvironmentFailure, "seed_session", answer.status, answer.body)
        finally:
            del self._seeding[session_id]
            seeding.set()
        if not token:
            closing = self._closing_headers(session_id) if route == VERIFY else None
            return await self._post(route, body, session_id, failures, closing)
        return answer.status, answer.body, answer

    def _boundary(
        self, route: str, url: str, failures: tuple[type[RolloutFailure], type[RolloutFailure]]
    ) -> Boundary:
        boundary = self._boundaries.get(route)
        if boundary is None or boundary.failure is not failures[0]:
            boundary = Boundary(*failures, shown_url(url), overruns=(TimeoutError,))
            self._boundaries[route] = boundary
        return boundary

    async def _send(
        self,
        url: str,
        data: bytes,
        headers: dict[str, str] | FramedHeaders,
        boundary: Boundary,
        route: str,
        *,
        seeding: bool = False,
    ) -> HttpAnswer:
        """One POST with the retry budget (see the module docstring for what is retried)."""
        seed = route == SEED_SESSION
        # A seed turned away is sent again; a call seeding its session only when the server
        # itself refused the seed (a 503 without the session's token: the call never ran).
        busy = _BUSY_STATUSES if seed else _REFUSED_STATUSES if seeding else _NONE
        attempt = 0
        while True:
            retry_after: float | None = None
            try:
                answer = await self._http.request(
                    "POST",
                    url,
                    body=data,
                    headers=headers,
                    connect_timeout=_CONNECT_SECONDS,
                    read_timeout=_ANSWER_SECONDS,
                    # Resent on a dead kept-alive connection only if running twice is harmless.
                    idempotent=route in RESENDABLE_ROUTES,
                )
            except Exception as error:
                if not _retried(error, seed):
                    boundary.raise_for(error)
                    raise
                last: str | HttpAnswer = describe(error)
            else:
                if answer.status not in busy or answer.header(SESSION_HEADER):
                    return answer
                retry_after = _seconds(answer.headers.get("retry-after"))
                last = answer
            if attempt >= self._retry.max_retries:
                break
            await asyncio.sleep(self._retry.delay(attempt, retry_after, unit=random.random()))
            attempt += 1
        if isinstance(last, HttpAnswer):
            return last  # the caller names the status and what the server said
        raise EnvironmentUnreachable(
            f"environment server unreachable: {shown_url(url)} failed after {attempt + 1} "
            f"attempt(s); last: {last}"
        )

    def _remember_cookies(self, session_id: str, response: HttpAnswer) -> None:
        jar = self._cookies.get(session_id)
        if jar is not None:
            for header in response.header_values("set-cookie"):
                for key, morsel in SimpleCookie(header).items():
                    jar[key] = morsel.value


_SEED = (EnvironmentFailure, EnvironmentTimeout)
_ENV = (EnvironmentFailure, EnvironmentTimeout)
_TOOL = (ToolFailure, ToolTimeout)
_VERIFY = (VerifierFailure, VerifierTimeout)


def _retried(error: Exception, seed: bool) -> bool:
    """Whether a failed POST is sent again: nothing was sent (a connection that could not be
    made), or a seed whose connection broke (the server may have seen it: a session lost)."""
    return isinstance(error, ConnectFailed) or (seed and isinstance(error, TransportError))


def _answered(failure: type[RolloutFailure], what: str, status: int, body: bytes) -> RolloutFailure:
    """The failure a non-2xx answer means: the one it carries (its kind kept), else ``failure``."""
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        parsed = None
    carried = failure_from_fields(parsed) if isinstance(parsed, dict) else None
    if carried is None:
        return failure(f"{what} answered {status}: {body_excerpt(body)}")
    error = failure(f"{what} answered {status}: {carried.reason}")
    error.kind = carried.kind  # a timeout on the server is a timeout here
    return error


def _is_session_lost(body: bytes) -> bool:
    """Whether a 404 is the server's "this session is lost" (not an unknown route or tool)."""
    try:
        kind, _ = error_of(orjson.loads(body))
    except orjson.JSONDecodeError:
        return False
    return kind == SESSION_LOST


def _seconds(value: str | None) -> float | None:
    """A numeric ``Retry-After``; the HTTP-date form is ignored (the backoff applies)."""
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    return seconds if seconds is not None and seconds >= 0 else None


def _as_output(body: bytes) -> ToolOutput:
    """A tool's JSON answer as the model reads it, as in-process: a JSON string unquoted,
    content parts (text and images) as they are, anything else as its JSON text."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body.decode(errors="replace")
    if isinstance(value, str):
        return value
    parts = content_parts(value)
    return parts if parts is not None else body.decode()


def _error_message(body: bytes) -> str:
    try:
        return error_of(orjson.loads(body))[1]
    except orjson.JSONDecodeError:
        return body_excerpt(body)


def body_excerpt(body: bytes) -> str:
    """The start of an answer's body, for a one-line error."""
    return body[:300].decode(errors="replace")
