"""``RemoteAgent``: a running agent server as the collector's ``RolloutRunner``."""

from __future__ import annotations

import aiohttp
import orjson

from palaestra.agents.base import AgentResult
from palaestra.errors import ConfigError, ModelUnreachable
from palaestra.serve.remote_env import verdict_from_answer
from palaestra.types import Failure, FailureKind, JsonDict


class RemoteAgent:
    """Sends each task to ``POST {url}/run`` and turns the answer back into an ``AgentResult``."""

    def __init__(self, url: str, *, token: str | None = None, timeout: float = 3600.0) -> None:
        self.url = url.rstrip("/")
        self.name = "remote"
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._timeout = aiohttp.ClientTimeout(total=timeout, connect=10)
        self._http: aiohttp.ClientSession | None = None

    def _session(self) -> aiohttp.ClientSession:
        if self._http is None:
            # No connection cap: --concurrency is the bound, and aiohttp's default of 100
            # would silently queue rollouts behind it.
            self._http = aiohttp.ClientSession(
                timeout=self._timeout,
                cookie_jar=aiohttp.DummyCookieJar(),
                connector=aiohttp.TCPConnector(limit=0),
            )
        return self._http

    async def check(self) -> None:
        try:
            async with self._session().get(f"{self.url}/", headers=self._headers) as alive:
                if alive.status != 200:
                    raise ConfigError(f"agent server {self.url} answered {alive.status}")
                info = await alive.json(loads=orjson.loads)
                self.name = str(info.get("agent", "remote"))
        except (aiohttp.ClientError, TimeoutError) as error:
            raise ModelUnreachable(f"cannot reach agent server {self.url}: {error}") from None

    async def run(self, task: JsonDict) -> AgentResult:
        try:
            async with self._session().post(
                f"{self.url}/run",
                data=orjson.dumps(task),
                headers={"Content-Type": "application/json", **self._headers},
            ) as answer:
                status, raw = answer.status, await answer.read()
        except aiohttp.ClientConnectionError as error:
            raise ModelUnreachable(f"agent server {self.url} unreachable: {error}") from None
        except TimeoutError:
            return _failed(FailureKind.TIMEOUT, f"agent server {self.url} timed out")
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            body = None
        if not isinstance(body, dict):
            return _failed(
                FailureKind.INTERNAL_ERROR,
                f"agent server answered {status} with something not a JSON object",
            )
        return _result_of(status, body, task)

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.close()


def _result_of(status: int, body: JsonDict, task: JsonDict) -> AgentResult:
    facts = body.get("_palaestra") or {}
    result = AgentResult(
        response=body.get("response"),
        model_calls=int(facts.get("model_calls", 0)),
        tool_calls=int(facts.get("tool_calls", 0)),
        timings=dict(facts.get("timings", {})),
    )
    if isinstance(body.get("failure"), dict) or (status == 200 and "reward" in body):
        verdict = verdict_from_answer(body, task)
        result.failure, result.verdict = verdict.failure, (verdict if not verdict.failure else None)
    else:
        message = (body.get("error") or {}).get("message", "")
        result.failure = Failure(
            FailureKind.INTERNAL_ERROR, f"agent server answered {status}: {message}"[:500]
        )
    return result


def _failed(kind: FailureKind, reason: str) -> AgentResult:
    return AgentResult(failure=Failure(kind, reason))
