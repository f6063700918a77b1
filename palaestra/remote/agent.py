"""``RemoteAgent``: a running agent server as the collector's ``RolloutRunner``.

A rollout the server reports failed, in palaestra's form (``failure``) or NeMo Gym's
(``_ng_failure_class``, with a placeholder ``reward`` beside it), is recorded as that failure;
so is any answer that is not a 2xx row with a numeric ``reward``. Never a score. A 503 carrying
a failure means the server cannot reach its model or environment: it is raised as
``EnvironmentUnreachable``/``ModelUnreachable``, so the collector's stop rule applies.
"""

from __future__ import annotations

import orjson

from palaestra.agents.base import AgentResult
from palaestra.errors import ConfigError, EnvironmentUnreachable, ModelUnreachable
from palaestra.protocol import failure_from_fields
from palaestra.remote.env import verdict_from_answer
from palaestra.transport import HttpClient, TransportError
from palaestra.types import Failure, FailureKind, JsonDict

_CONNECT_SECONDS = 10.0


class RemoteAgent:
    """Sends each task to ``POST {url}/run`` and turns the answer back into an ``AgentResult``."""

    def __init__(self, url: str, *, token: str | None = None, timeout: float = 3600.0) -> None:
        self.url = url.rstrip("/")
        self.name = "remote"
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._post_headers = {"Content-Type": "application/json", **self._headers}
        self._timeout = timeout
        # No connection cap: --concurrency is the bound.
        self._http = HttpClient()

    async def check(self) -> None:
        try:
            alive = await self._http.request(
                "GET",
                f"{self.url}/",
                headers=self._headers,
                connect_timeout=_CONNECT_SECONDS,
                read_timeout=_CONNECT_SECONDS,
            )
        except (TransportError, TimeoutError) as error:
            detail = str(error) or type(error).__name__
            raise ModelUnreachable(f"cannot reach agent server {self.url}: {detail}") from None
        if alive.status != 200:
            raise ConfigError(f"agent server {self.url} answered {alive.status}")
        try:
            info = orjson.loads(alive.body)
        except orjson.JSONDecodeError:
            info = None
        if not isinstance(info, dict):
            raise ConfigError(f"agent server {self.url} did not answer a JSON object on GET /")
        self.name = str(info.get("agent", "remote"))

    async def run(self, task: JsonDict) -> AgentResult:
        try:
            answer = await self._http.request(
                "POST",
                f"{self.url}/run",
                body=orjson.dumps(task),
                headers=self._post_headers,
                connect_timeout=_CONNECT_SECONDS,
                read_timeout=self._timeout,
            )
        except TimeoutError:
            return _failed(FailureKind.TIMEOUT, f"agent server {self.url} timed out")
        except TransportError as error:
            raise ModelUnreachable(f"agent server {self.url} unreachable: {error}") from None
        status, raw = answer.status, answer.body
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            body = None
        if not isinstance(body, dict):
            return _failed(
                FailureKind.INTERNAL_ERROR,
                f"agent server answered {status} with something not a JSON object",
            )
        if status == 503:
            _raise_unreachable(self.url, body)
        return _result_of(status, body, task)

    async def aclose(self) -> None:
        await self._http.aclose()


def _result_of(status: int, body: JsonDict, task: JsonDict) -> AgentResult:
    facts = body.get("_palaestra")
    facts = facts if isinstance(facts, dict) else {}
    result = AgentResult(
        response=body.get("response"),
        model_calls=int(facts.get("model_calls", 0)),
        tool_calls=int(facts.get("tool_calls", 0)),
        timings=dict(facts.get("timings", {})),
    )
    failure = failure_from_fields(body)
    if failure is None and 200 <= status < 300 and "reward" in body:
        try:
            result.verdict = verdict_from_answer(body, task)
            return result
        except (KeyError, TypeError, ValueError) as error:
            failure = Failure(
                FailureKind.INTERNAL_ERROR, f"agent server answered an unusable row: {error}"
            )
    if failure is None:
        said = body.get("error")
        message = said.get("message", "") if isinstance(said, dict) else str(said or "")
        failure = Failure(
            FailureKind.INTERNAL_ERROR, f"agent server answered {status}: {message}"[:500]
        )
    result.failure = failure
    return result


def _raise_unreachable(url: str, body: JsonDict) -> None:
    """A 503 carrying a failure: the agent server cannot reach its model or environment.

    Raised as the matching ``ServiceUnreachable`` so the collector stops the run (resumable)
    as it would if it called that service itself. A 503 without one is the rollout's failure.
    """
    failure = failure_from_fields(body)
    if failure is None:
        return
    reason = f"agent server {url}: {failure.reason}"
    if failure.kind is FailureKind.ENV_ERROR:
        raise EnvironmentUnreachable(reason)
    raise ModelUnreachable(reason)


def _failed(kind: FailureKind, reason: str) -> AgentResult:
    return AgentResult(failure=Failure(kind, reason))
