"""``RemoteAgent`` against agent servers that answer failed rollouts in each peer's form."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from palaestra.errors import ConfigError, EnvironmentUnreachable, ModelUnreachable
from palaestra.http.json import JSONResponse
from palaestra.http.runner import BackgroundServer
from palaestra.remote.agent import RemoteAgent
from palaestra.types import AgentResult, FailureKind, JsonDict
from tests.transport.raw_server import Servers, answer, answer_always

TASK: JsonDict = {"responses_create_params": {"input": "x"}}


class Answers:
    """An agent server answering ``/run`` with whatever status and body the test sets."""

    def __init__(self) -> None:
        self.status = 200
        self.body: JsonDict = {}

    def app(self) -> Starlette:
        async def run(request: Request) -> Response:
            return JSONResponse(self.body, status_code=self.status)

        return Starlette(routes=[Route("/run", run, methods=["POST"])])


@pytest.fixture
def answers() -> Iterator[tuple[Answers, str]]:
    answers = Answers()
    with BackgroundServer(answers.app()) as server:
        yield answers, server.url


async def _run(url: str) -> AgentResult:
    agent = RemoteAgent(url)
    try:
        return await agent.run(TASK)
    finally:
        await agent.aclose()


async def test_a_nemo_gym_failure_row_with_a_placeholder_reward_is_a_failure(
    answers: tuple[Answers, str],
) -> None:
    server, url = answers
    # NeMo Gym's agents pass a failed verify on as a 200 row: a float reward is required, so a
    # placeholder 0.0 travels beside the failure class. Before: scored as a real 0.0.
    server.body = {**TASK, "reward": 0.0, "_ng_failure_class": "timeout_exceeded"}
    result = await _run(url)
    assert result.verdict is None
    assert result.failure is not None and result.failure.kind is FailureKind.TIMEOUT


async def test_palaestra_failure_rows_keep_their_kind_at_any_status(
    answers: tuple[Answers, str],
) -> None:
    server, url = answers
    failure = {"kind": "session_lost", "reason": "the env restarted", "masked": True}
    for status in (200, 500):
        server.status, server.body = status, {"failure": failure, "_ng_failure_class": "transient"}
        result = await _run(url)
        assert result.verdict is None
        assert result.failure is not None and result.failure.kind is FailureKind.SESSION_LOST
        assert result.failure.reason == "the env restarted"


async def test_a_row_that_is_not_a_score_fails_its_rollout_only(
    answers: tuple[Answers, str],
) -> None:
    server, url = answers
    server.body = {**TASK, "reward": "high"}
    result = await _run(url)  # before: ValueError out of run()
    assert result.verdict is None
    assert result.failure is not None and result.failure.kind is FailureKind.INTERNAL_ERROR
    server.status, server.body = 502, {"reward": 1.0, "error": "bad gateway"}
    result = await _run(url)  # a reward in an error answer is not a score
    assert result.verdict is None
    assert result.failure is not None and "502: bad gateway" in result.failure.reason
    server.status, server.body = 200, {**TASK, "reward": 1.0, "_palaestra": {"model_calls": 2}}
    result = await _run(url)
    assert result.failure is None and result.verdict is not None
    assert (result.verdict.reward, result.model_calls) == (1.0, 2)


async def test_an_agent_server_that_cannot_reach_its_environment_stops_the_caller(
    answers: tuple[Answers, str],
) -> None:
    server, url = answers
    failure = {"kind": "env_error", "reason": "http://127.0.0.1:9/seed_session refused"}
    server.status, server.body = 503, {"failure": failure, "_ng_failure_class": "legitimate"}
    with pytest.raises(EnvironmentUnreachable, match=r"127\.0\.0\.1:9/seed_session refused"):
        await _run(url)
    server.body = {"failure": {**failure, "kind": "model_error"}}
    with pytest.raises(ModelUnreachable):
        await _run(url)
    server.body = {"error": {"message": "overloaded"}}  # a 503 without a failure: this rollout's
    result = await _run(url)
    assert result.failure is not None and "503: overloaded" in result.failure.reason


async def test_an_agent_server_on_a_unix_socket_is_named_by_its_socket_path(
    tmp_path: Path,
) -> None:
    servers = Servers()
    socket_path = tmp_path / "agent.sock"
    server = await servers.start(answer_always(answer(b"", status="500 Oops")), unix=socket_path)
    agent = RemoteAgent(server.url(""))
    try:
        with pytest.raises(ConfigError) as caught:
            await agent.check()
    finally:
        await agent.aclose()
        await server.close()
    assert str(caught.value) == f"agent server unix:{socket_path} answered 500"
