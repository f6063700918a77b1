"""``RemoteAgent``: a running agent server as the collector's ``RolloutRunner``.

A rollout the server reports failed, in palaestra's form (``failure``) or NeMo Gym's
(``_ng_failure_class``, with a placeholder ``reward`` beside it), is recorded as that failure;
so is any answer that is not a 2xx row with a numeric ``reward``. Never a score. A 503 carrying
a failure means the server cannot reach its model or environment: it is raised as
``EnvironmentUnreachable``/``ModelUnreachable``, so the collector's stop rule applies. The
answers are decoded by ``palaestra.wire.protocol``, whose twins the agent server encodes with.
"""

from __future__ import annotations

import orjson

from palaestra.agents.base import RolloutRunner
from palaestra.agents.context import NO_CONTEXT, RolloutContext
from palaestra.environment.running.boundary import Boundary, describe
from palaestra.errors import (
    AgentServerTimeout,
    ConfigError,
    EnvironmentUnreachable,
    ModelUnreachable,
)
from palaestra.transport import HttpClient, TransportError, shown_url
from palaestra.types import AgentResult, Failure, FailureKind, JsonDict
from palaestra.wire.protocol import (
    LIVENESS,
    NO_ECHO_HEADER,
    RUN,
    agent_identity_of,
    echoes_run,
    failure_from_fields,
    run_result,
)

_CONNECT_SECONDS = 10.0


class RemoteAgent(RolloutRunner):
    """Sends each task to ``POST {url}/run`` and turns the answer back into an ``AgentResult``."""

    durable = False
    """Its rollouts cannot checkpoint (``RolloutRunner``): the server's agent runs them whole,
    so the collector lends them no ``Durability``."""

    def __init__(self, url: str, *, token: str | None = None, timeout: float = 3600.0) -> None:
        self.url = url.rstrip("/")
        self._shown = shown_url(self.url)  # as messages name it (a Unix socket as unix:<path>)
        self.name = "remote"
        self.environment: str | None = None
        """The environment the server's agent runs against, as its ``GET /`` names it."""
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._post_headers = {"Content-Type": "application/json", **self._headers}
        self._run_headers = self._post_headers
        """``/run``'s headers: asking for no echo of the task once ``check`` found a palaestra
        server (``NO_ECHO_HEADER``)."""
        self._timeout = timeout
        # No connection cap: --concurrency is the bound.
        self._http = HttpClient()
        # A transport timeout is the rollout's timeout; any other transport error means the
        # server cannot be reached, which stops the run (resumable).
        self._boundary = Boundary(
            ModelUnreachable,
            AgentServerTimeout,
            f"agent server {self._shown}",
            overruns=(TimeoutError,),
        )

    async def check(self) -> None:
        try:
            alive = await self._http.request(
                "GET",
                f"{self.url}{LIVENESS}",
                headers=self._headers,
                connect_timeout=_CONNECT_SECONDS,
                read_timeout=_CONNECT_SECONDS,
            )
        except (TransportError, TimeoutError) as error:
            raise ModelUnreachable(
                f"cannot reach agent server {self._shown}: {describe(error)}"
            ) from None
        if alive.status != 200:
            raise ConfigError(f"agent server {self._shown} answered {alive.status}")
        try:
            info = orjson.loads(alive.body)
        except orjson.JSONDecodeError:
            info = None
        if not isinstance(info, dict):
            raise ConfigError(f"agent server {self._shown} did not answer a JSON object on GET /")
        self.name, self.environment = agent_identity_of(info)
        if not echoes_run(info):  # a palaestra agent server: the task need not come back
            self._run_headers = {**self._post_headers, NO_ECHO_HEADER: "1"}

    async def run(self, task: JsonDict, context: RolloutContext = NO_CONTEXT) -> AgentResult:
        """Run ``task`` on the server; ``context`` lends it nothing (``durable = False``: the
        server's rollouts do not checkpoint)."""
        try:
            with self._boundary:
                answer = await self._http.request(
                    "POST",
                    f"{self.url}{RUN}",
                    body=orjson.dumps(task),
                    headers=self._run_headers,
                    connect_timeout=_CONNECT_SECONDS,
                    read_timeout=self._timeout,
                )
        except AgentServerTimeout as failure:  # this rollout's; unreachable stops the run
            return AgentResult(failure=Failure(failure.kind, failure.reason))
        status, raw = answer.status, answer.body
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            body = None
        if not isinstance(body, dict):
            return AgentResult(
                failure=Failure(
                    FailureKind.INTERNAL_ERROR,
                    f"agent server answered {status} with something not a JSON object",
                )
            )
        if status == 503:
            _raise_unreachable(self._shown, body)
        return run_result(status, body, task)

    async def aclose(self) -> None:
        await self._http.aclose()


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
