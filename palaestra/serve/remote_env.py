"""``RemoteEnvironmentClient``: an environment behind NeMo Gym's resources-server protocol.

It speaks to a palaestra environment server or to a NeMo Gym resources server alike. Each
session keeps its own cookies (NeMo Gym keys sessions by a cookie), sent by hand so that
concurrent rollouts sharing one connection pool never see each other's cookies. Tool calls are
not retried: a tool may have side effects, and running it twice would change the rollout.
"""

from __future__ import annotations

import secrets
from http.cookies import SimpleCookie

import orjson

from palaestra.errors import (
    ConfigError,
    EnvironmentFailure,
    RolloutFailure,
    ToolCallRejected,
    ToolFailure,
    VerifierFailure,
)
from palaestra.serve.sessions_http import HEADER_NAME
from palaestra.step_env import StepResult
from palaestra.transport import HttpAnswer, HttpClient, TransportError
from palaestra.types import Failure, FailureKind, JsonDict, Verdict

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
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.name = name
        self.default_agent = "tool_calling"
        """The agent the served environment asks for (a NeMo Gym server: tool_calling)."""
        self._owns_http = http is None
        self._http = http or HttpClient()  # no connection cap: --concurrency is the bound
        self._tools = tools or []
        self._auth = {"Authorization": f"Bearer {token}"} if token else {}
        self._cookies: dict[str, dict[str, str]] = {}
        self._headers: dict[str, dict[str, str]] = {}

    @classmethod
    async def connect(
        cls, base_url: str, *, http: HttpClient | None = None, token: str | None = None
    ) -> RemoteEnvironmentClient:
        """Check the server is up and learn its tools (a NeMo Gym server lists none)."""
        client = cls(base_url, http=http, token=token)
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
        status, body, response = await self._post("seed_session", task, None, EnvironmentFailure)
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
        self, route: str, body: JsonDict, session_id: str | None, failure: type[RolloutFailure]
    ) -> tuple[int, bytes, HttpAnswer]:
        headers = {"Content-Type": "application/json", **self._auth}
        if session_id is not None:
            headers.update(self._headers.get(session_id, {}))
            cookies = self._cookies.get(session_id, {})
            if cookies:
                headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
        try:
            answer = await self._http.request(
                "POST",
                f"{self.base_url}/{route}",
                body=orjson.dumps(body),
                headers=headers,
                connect_timeout=_CONNECT_SECONDS,
                read_timeout=_ANSWER_SECONDS,
            )
        except TimeoutError:
            raise failure(f"{self.base_url}/{route} timed out") from None
        except TransportError as error:
            raise failure(f"{self.base_url}/{route} failed: {error}") from None
        if session_id is not None:
            self._remember_cookies(session_id, answer)
        return answer.status, answer.body, answer

    def _remember_cookies(self, session_id: str, response: HttpAnswer) -> None:
        jar = self._cookies.get(session_id)
        if jar is not None:
            for header in response.header_values("set-cookie"):
                for key, morsel in SimpleCookie(header).items():
                    jar[key] = morsel.value


def verdict_from_answer(answer: JsonDict, task: JsonDict) -> Verdict:
    """A verify answer back into a Verdict: its fields beyond the task's are the metrics."""
    failure = answer.get("failure")
    if isinstance(failure, dict):
        return Verdict(
            failure=Failure(
                FailureKind(failure["kind"]),
                str(failure["reason"]),
                bool(failure.get("masked", True)),
            )
        )
    metrics = {k: v for k, v in answer.items() if k not in _PROTOCOL_FIELDS and k not in task}
    return Verdict(
        reward=float(answer["reward"]),
        reward_components=answer.get("reward_components"),
        step_rewards=answer.get("step_rewards"),
        metrics=metrics,
    )


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
