"""``RemoteEnvironmentClient``: an environment behind NeMo Gym's resources-server protocol.

It speaks to a palaestra environment server or to a NeMo Gym resources server alike. Each
session keeps its own cookies (NeMo Gym keys sessions by a cookie), sent by hand so that
concurrent rollouts sharing one connection pool never see each other's cookies.

What is retried, within the ``RetryPolicy`` budget (the model clients' backoff): a call whose
connection could not be made (nothing was sent, so nothing can run twice), and a seed the server
turned away as busy (502/503/504, honouring ``Retry-After``) or whose connection dropped (a
second seed only costs a session that expires). Nothing else: a tool may have side effects, and
running it twice would change the rollout. A server still unreachable after the budget is an
``EnvironmentUnreachable`` (the collector stops the run, resumable). A session the server no
longer knows (restarted, expired, forged token: a 404 of type ``session_lost``) is a
``SessionLost`` failure, never a fresh session scored as if it were the rollout's.
"""

from __future__ import annotations

import asyncio
import random
import secrets
from http.cookies import SimpleCookie

import orjson

from palaestra.errors import (
    ConfigError,
    EnvironmentFailure,
    EnvironmentUnreachable,
    RolloutFailure,
    SessionLost,
    ToolCallRejected,
    ToolFailure,
    VerifierFailure,
)
from palaestra.models.http import RetryPolicy
from palaestra.protocol import SESSION_LOST, failure_from_fields
from palaestra.serve.sessions_http import HEADER_NAME
from palaestra.step_env import StepResult
from palaestra.transport import ConnectFailed, HttpAnswer, HttpClient, TransportError
from palaestra.types import JsonDict, Verdict

_PROTOCOL_FIELDS = frozenset(
    {
        "reward",
        "reward_components",
        "step_rewards",
        "failure",
        "response",
        "responses_create_params",
        "_palaestra",
        "agent_ref",
        "_ng_task_index",
        "_ng_rollout_index",
        "error",
    }
)


_CONNECT_SECONDS = 10.0
_ANSWER_SECONDS = 300.0
_BUSY_STATUSES = frozenset({502, 503, 504})
"""Answers to a seed that are retried: the server (or a proxy before it) had no room."""


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
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.name = name
        self.default_agent = "tool_calling"
        """The agent the served environment asks for (a NeMo Gym server: tool_calling)."""
        self._owns_http = http is None
        self._http = http or HttpClient()  # no connection cap: --concurrency is the bound
        self._tools = tools or []
        self._retry = retry or RetryPolicy()
        self._auth = {"Authorization": f"Bearer {token}"} if token else {}
        self._cookies: dict[str, dict[str, str]] = {}
        self._headers: dict[str, dict[str, str]] = {}

    @classmethod
    async def connect(
        cls,
        base_url: str,
        *,
        http: HttpClient | None = None,
        token: str | None = None,
        retry: RetryPolicy | None = None,
    ) -> RemoteEnvironmentClient:
        """Check the server is up and learn its tools (a NeMo Gym server lists none)."""
        client = cls(base_url, http=http, token=token, retry=retry)
        try:
            await client._learn_tools()
        except (TransportError, TimeoutError) as error:
            await client.aclose()
            detail = str(error) or type(error).__name__
            raise ConfigError(f"cannot reach environment server {base_url}: {detail}") from None
        except ConfigError:
            await client.aclose()
            raise
        return client

    async def _learn_tools(self) -> None:
        alive = await self._get("/")
        if alive.status >= 400:
            raise ConfigError(f"environment server {self.base_url} answered {alive.status}")
        listed = await self._get("/tools")
        if listed.status != 200:
            return
        try:
            listing = orjson.loads(listed.body)
            self._tools = list(listing["tools"])
            self.default_agent = str(listing.get("default_agent", "tool_calling"))
        except (orjson.JSONDecodeError, KeyError, TypeError) as error:
            raise ConfigError(f"{self.base_url}/tools answered an unusable body: {error}") from None

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
        status, body, response = await self._post(
            "seed_session", task, None, EnvironmentFailure, seed=True
        )
        if status != 200:
            raise EnvironmentFailure(f"seed_session answered {status}: {_excerpt(body)}")
        handle = secrets.token_hex(8)
        self._cookies[handle] = {}
        self._remember_cookies(handle, response)
        token = response.headers.get(HEADER_NAME.lower())
        self._headers[handle] = {HEADER_NAME: token} if token else {}
        return handle

    async def call_tool(self, session_id: str, name: str, arguments: JsonDict) -> str:
        status, body, _ = await self._post(name, arguments, session_id, ToolFailure)
        if status == 200:
            return _as_text(body)
        if status in (400, 404, 422):
            raise ToolCallRejected(
                _error_message(body) if status != 404 or body else f"unknown tool '{name}'"
            )
        raise ToolFailure(f"tool '{name}' answered {status}: {_excerpt(body)}")

    async def verify(self, session_id: str, task: JsonDict, response: JsonDict) -> Verdict:
        status, body, _ = await self._post(
            "verify", {**task, "response": response}, session_id, VerifierFailure
        )
        if status != 200:
            raise VerifierFailure(f"verify answered {status}: {_excerpt(body)}")
        try:
            answer = orjson.loads(body)
            return verdict_from_answer(answer, task)
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as error:
            raise VerifierFailure(f"verify answered an unusable body: {error}") from None

    async def reset(self, session_id: str) -> str:
        body = await self._post_ok("reset", {}, session_id)
        return str(body["observation"])

    async def step(self, session_id: str, action: str) -> StepResult:
        return StepResult.from_json(await self._post_ok("step", {"action": action}, session_id))

    async def _post_ok(self, route: str, body: JsonDict, session_id: str) -> JsonDict:
        status, raw, _ = await self._post(route, body, session_id, EnvironmentFailure)
        if status == 404:
            raise EnvironmentFailure(f"{self.base_url} has no /{route}: not a turn-based env")
        if status != 200:
            raise EnvironmentFailure(f"/{route} answered {status}: {_excerpt(raw)}")
        try:
            answer = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise EnvironmentFailure(f"/{route} answered a non-JSON body") from None
        if not isinstance(answer, dict):
            raise EnvironmentFailure(f"/{route} answered {type(answer).__name__}, not an object")
        return answer

    async def close(self, session_id: str) -> None:
        try:
            await self._post("close_session", {}, session_id, EnvironmentFailure)
        finally:
            self._cookies.pop(session_id, None)
            self._headers.pop(session_id, None)

    async def aclose(self) -> None:
        self._cookies.clear()
        self._headers.clear()
        if self._owns_http:
            await self._http.aclose()

    async def _post(
        self,
        route: str,
        body: JsonDict,
        session_id: str | None,
        failure: type[RolloutFailure],
        *,
        seed: bool = False,
    ) -> tuple[int, bytes, HttpAnswer]:
        headers = {"Content-Type": "application/json", **self._auth}
        if session_id is not None:
            headers.update(self._headers.get(session_id, {}))
            cookies = self._cookies.get(session_id, {})
            if cookies:
                headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
        url = f"{self.base_url}/{route}"
        answer = await self._send(url, orjson.dumps(body), headers, failure, seed)
        if session_id is not None:
            if answer.status == 404 and _is_session_lost(answer.body):
                raise SessionLost(f"{url}: {_error_message(answer.body)}")
            self._remember_cookies(session_id, answer)
        return answer.status, answer.body, answer

    async def _send(
        self,
        url: str,
        data: bytes,
        headers: dict[str, str],
        failure: type[RolloutFailure],
        seed: bool,
    ) -> HttpAnswer:
        """One POST with the retry budget (see the module docstring for what is retried)."""
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
                    # Resent on a dead kept-alive connection only if running twice is harmless:
                    # a seed or a close, never a tool call, verify, reset or step.
                    idempotent=seed or url.endswith("/close_session"),
                )
            except ConnectFailed as error:  # refused, unresolvable: nothing was sent
                last: str | HttpAnswer = str(error) or type(error).__name__
            except TimeoutError:
                raise failure(f"{url} timed out") from None
            except TransportError as error:  # the server may have seen it: a seed only
                if not seed:
                    raise failure(f"{url} failed: {error}") from None
                last = f"connection failed: {error}"
            else:
                if not (seed and answer.status in _BUSY_STATUSES):
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
            f"environment server unreachable: {url} failed after {attempt + 1} attempt(s); "
            f"last: {last}"
        )

    def _remember_cookies(self, session_id: str, response: HttpAnswer) -> None:
        jar = self._cookies.get(session_id)
        if jar is not None:
            for header in response.header_values("set-cookie"):
                for key, morsel in SimpleCookie(header).items():
                    jar[key] = morsel.value


def verdict_from_answer(answer: JsonDict, task: JsonDict) -> Verdict:
    """A verify answer back into a Verdict: its fields beyond the task's are the metrics.

    An answer carrying a failure (palaestra's ``failure`` or NeMo Gym's ``_ng_failure_class``)
    is that failure, whatever placeholder ``reward`` travels beside it.
    """
    failure = failure_from_fields(answer)
    if failure is not None:
        return Verdict(failure=failure)
    metrics = {k: v for k, v in answer.items() if k not in _PROTOCOL_FIELDS and k not in task}
    return Verdict(
        reward=float(answer["reward"]),
        reward_components=answer.get("reward_components"),
        step_rewards=answer.get("step_rewards"),
        metrics=metrics,
    )


def _is_session_lost(body: bytes) -> bool:
    """Whether a 404 is the server's "this session is lost" (not an unknown route or tool)."""
    try:
        error = orjson.loads(body).get("error")
    except (orjson.JSONDecodeError, AttributeError):
        return False
    return isinstance(error, dict) and error.get("type") == SESSION_LOST


def _seconds(value: str | None) -> float | None:
    """A numeric ``Retry-After``; the HTTP-date form is ignored (the backoff applies)."""
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    return seconds if seconds is not None and seconds >= 0 else None


def _as_text(body: bytes) -> str:
    """A tool's JSON answer as the model reads it; a JSON string is unquoted, as in-process."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body.decode(errors="replace")
    return value if isinstance(value, str) else body.decode()


def _error_message(body: bytes) -> str:
    try:
        error = orjson.loads(body)
        if isinstance(error, dict):
            detail = error.get("error", error.get("detail", error))
            if isinstance(detail, dict) and "message" in detail:
                return str(detail["message"])
            return str(detail)
    except orjson.JSONDecodeError:
        pass
    return _excerpt(body)


def _excerpt(body: bytes) -> str:
    return body[:300].decode(errors="replace")
