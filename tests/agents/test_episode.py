from __future__ import annotations

import math
from collections.abc import Iterator

import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from palaestra import Environment, LocalEnvironmentClient, Session, Verdict
from palaestra.agents import SingleTurnAgent
from palaestra.environment.running.client import EnvironmentClient
from palaestra.http.runner import BackgroundServer
from palaestra.remote.env import RemoteEnvironmentClient
from palaestra.types import FailureKind, JsonDict
from tests.support.fake_model import FakeModel, say
from tests.support.open_responses import response_problems

BROKEN_VERDICTS: list[object] = [
    math.nan,
    math.inf,
    -math.inf,
    Verdict(reward=math.nan),
    Verdict(reward="x"),  # type: ignore[arg-type]
    Verdict(reward=None),  # type: ignore[arg-type]
    Verdict(reward=1.0, reward_components={"style": math.inf}),
    Verdict(reward=1.0, reward_components={"style": "high"}),  # type: ignore[dict-item]
    Verdict(reward=1.0, step_rewards=[0.5, math.nan]),
    Verdict(reward=1.0, step_rewards=[0.5, "x"]),  # type: ignore[list-item]
]


class Returns(Environment):
    """verify returns whatever the task carries."""

    def verify(self, session: Session, response: JsonDict) -> Verdict | float:
        return session.task["verdict"]  # type: ignore[no-any-return]


def _task(**extra: object) -> JsonDict:
    return {"responses_create_params": {"input": "answer"}, **extra}


async def _run(task: JsonDict, env: EnvironmentClient) -> tuple[FailureKind | None, str]:
    """The failure of one rollout (the episode's, or the verdict's own), or (None, "")."""
    result = await SingleTurnAgent().run(task, env, FakeModel(lambda params: say("42")))
    assert (result.verdict is None) == (result.failure is not None)
    failure = result.failure or (result.verdict.failure if result.verdict else None)
    return (None, "") if failure is None else (failure.kind, failure.reason)


@pytest.mark.parametrize("verdict", BROKEN_VERDICTS, ids=lambda v: repr(v)[:48])
async def test_a_verify_returning_a_non_finite_or_non_number_reward_is_a_verifier_error(
    verdict: object,
) -> None:
    kind, reason = await _run(_task(verdict=verdict), LocalEnvironmentClient(Returns()))
    assert kind is FailureKind.VERIFIER_ERROR
    assert "not a finite number" in reason


async def test_finite_rewards_of_every_number_type_are_scores() -> None:
    client = LocalEnvironmentClient(Returns())
    for verdict in (1, True, 0.25, Verdict(reward=1, reward_components={"a": 1}, step_rewards=[0])):
        assert await _run(_task(verdict=verdict), client) == (None, "")


def _raw_verify_app() -> Starlette:
    """A resources server whose /verify answers the raw JSON text the task carries."""

    async def seed(request: Request) -> Response:
        return JSONResponse({})

    async def verify(request: Request) -> Response:
        body = orjson.loads(await request.body())
        return Response(str(body["answer"]), media_type="application/json")

    return Starlette(
        routes=[
            Route("/", lambda request: JSONResponse({}), methods=["GET"]),
            Route("/seed_session", seed, methods=["POST"]),
            Route("/verify", verify, methods=["POST"]),
            Route("/close_session", seed, methods=["POST"]),
        ]
    )


@pytest.fixture(scope="module")
def raw_server() -> Iterator[BackgroundServer]:
    with BackgroundServer(_raw_verify_app()) as server:
        yield server


@pytest.mark.parametrize(
    "answer",
    [
        '{"reward": "nan"}',
        '{"reward": "-inf"}',
        '{"reward": 1.0, "reward_components": {"style": "inf"}}',
        '{"reward": 1.0, "step_rewards": [1.0, null]}',
    ],
)
async def test_a_remote_verify_answering_a_non_finite_reward_is_a_verifier_error(
    raw_server: BackgroundServer, answer: str
) -> None:
    remote = await RemoteEnvironmentClient.connect(raw_server.url)
    try:
        kind, reason = await _run(_task(answer=answer), remote)
        assert kind is FailureKind.VERIFIER_ERROR
        assert "not a finite number" in reason
        assert await _run(_task(answer='{"reward": 0.5}'), remote) == (None, "")
    finally:
        await remote.aclose()


NEMO_GYM_RESPONSE_FIELDS = [  # nemo_gym.openai_utils.NeMoGymResponse.model_fields (0.4.0)
    "id", "created_at", "error", "incomplete_details", "instructions", "metadata", "model",
    "object", "output", "parallel_tool_calls", "temperature", "tool_choice", "tools", "top_p",
    "background", "conversation", "max_output_tokens", "max_tool_calls", "previous_response_id",
    "prompt", "prompt_cache_key", "reasoning", "safety_identifier", "service_tier", "status",
    "text", "top_logprobs", "truncation", "usage", "user",
]  # fmt: skip
SPEC_ADDS = ["completed_at", "presence_penalty", "frequency_penalty", "store"]
"""What Open Responses requires beyond NeMo Gym's fields, appended after them."""


class Scores(Environment):
    def verify(self, session: Session, response: JsonDict) -> Verdict:
        return Verdict(reward=1.0)


async def test_the_trajectory_response_has_nemo_gym_s_fields_in_its_order_null_where_unknown() -> (
    None
):
    task = {"responses_create_params": {"input": "hi", "temperature": 0.7, "model": "m1"}}
    minimal = {"output": say("4")["output"], "usage": say("4")["usage"], "status": "completed"}
    result = await SingleTurnAgent().run(
        task, LocalEnvironmentClient(Scores()), FakeModel(lambda params: minimal)
    )
    assert result.response is not None and result.verdict is not None
    whole = result.response
    assert list(whole) == [*NEMO_GYM_RESPONSE_FIELDS, *SPEC_ADDS]  # before: output, usage, status
    assert (whole["temperature"], whole["model"], whole["top_p"]) == (0.7, "m1", 1.0)
    assert (whole["tools"], whole["tool_choice"], whole["parallel_tool_calls"]) == (
        [],
        "auto",
        True,
    )
    assert whole["id"].startswith("resp_") and isinstance(whole["created_at"], int)
    assert whole["object"] == "response" and whole["output"] == minimal["output"]
    echoed = {**say("4"), "id": "resp_model", "created_at": 5, "temperature": 0.2, "extra": 1}
    result = await SingleTurnAgent().run(
        task, LocalEnvironmentClient(Scores()), FakeModel(lambda params: echoed)
    )
    assert result.response is not None
    assert list(result.response) == [*NEMO_GYM_RESPONSE_FIELDS, "extra", *SPEC_ADDS]  # its own wins
    assert (result.response["id"], result.response["temperature"]) == ("resp_model", 0.2)


async def test_a_failed_rollout_keeps_its_partial_trajectory_in_the_same_form() -> None:
    class Fails(Environment):
        def verify(self, session: Session, response: JsonDict) -> Verdict:
            raise ValueError("broken verifier")

    task = {"responses_create_params": {"input": "hi"}}
    result = await SingleTurnAgent().run(
        task, LocalEnvironmentClient(Fails()), FakeModel(lambda params: say("4"))
    )
    assert result.failure is not None and result.response is not None
    assert list(result.response) == [*NEMO_GYM_RESPONSE_FIELDS, *SPEC_ADDS]
    assert result.conformed and response_problems(result.response) == []


class Keeps(Environment):
    """verify keeps the Response it was given."""

    def __init__(self) -> None:
        self.seen: list[JsonDict] = []

    def verify(self, session: Session, response: JsonDict) -> Verdict:
        self.seen.append(response)
        return Verdict(reward=1.0)


async def test_the_verifier_and_the_row_read_one_open_responses_response() -> None:
    env = Keeps()
    tools = [{"type": "function", "name": "f"}]
    task = {"responses_create_params": {"input": "hi", "tools": tools}}
    answer = {"output": [{"type": "message", "role": "assistant", "content": "4"}]}
    result = await SingleTurnAgent().run(
        task, LocalEnvironmentClient(env), FakeModel(lambda params: answer)
    )
    assert result.response is not None and result.conformed
    assert env.seen == [result.response]  # what the verifier read is what the row writes
    assert response_problems(result.response) == []  # ids, parts and the tool's fields made
    assert result.response["output"][0]["content"][0]["type"] == "output_text"


async def test_a_client_whose_close_has_a_bug_fails_the_rollout_as_env_error_naming_it() -> None:
    class BuggyClose(LocalEnvironmentClient):
        async def close(self, session_id: str) -> None:
            raise KeyError(session_id)

    task = {"responses_create_params": {"input": "hi"}}
    result = await SingleTurnAgent().run(task, BuggyClose(Scores()), FakeModel(lambda p: say("4")))
    assert result.verdict is None and result.failure is not None
    assert result.failure.kind is FailureKind.ENV_ERROR
    assert result.failure.reason.startswith("close raised KeyError")
