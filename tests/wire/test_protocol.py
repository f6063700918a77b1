"""The protocol's codecs: what a server half encodes, its client half decodes unchanged."""

from __future__ import annotations

import pytest

from palaestra.types import AgentResult, Failure, FailureKind, JsonDict, StepResult, Verdict
from palaestra.wire.protocol import (
    RESERVED_ROUTES,
    error_body,
    error_of,
    failure_fields,
    failure_from_fields,
    run_answer,
    run_result,
    step_answer,
    step_from_answer,
    tools_answer,
    tools_of,
    verdict_from_answer,
    verify_answer,
)

TASK: JsonDict = {"responses_create_params": {"input": "hi"}, "expected_answer": "4", "id": 7}


@pytest.mark.parametrize("kind", list(FailureKind))
def test_every_failure_kind_travels_and_comes_back_as_itself(kind: FailureKind) -> None:
    failure = Failure(kind, "it broke", masked=False)
    assert failure_from_fields(failure_fields(failure)) == failure
    assert failure_from_fields(verify_answer(TASK, Verdict(failure=failure))) == failure


def test_a_scored_verify_answer_decodes_to_the_same_verdict_with_only_the_verifiers_metrics() -> (
    None
):
    verdict = Verdict(
        reward=0.5,
        reward_components={"format": 1.0},
        step_rewards=[0.0, 0.5],
        metrics={"extracted_answer": "4", "correct": True},
    )
    body = {**TASK, "response": {"output": []}}
    decoded = verdict_from_answer(verify_answer(body, verdict), TASK)
    assert decoded == verdict  # the task's own fields (id, expected_answer) are no metrics


def test_a_failed_verdict_never_decodes_as_its_placeholder_reward() -> None:
    answer = verify_answer(TASK, Verdict.failed(FailureKind.VERIFIER_ERROR, "no grade"))
    assert answer["reward"] == 0.0  # NeMo Gym's BaseVerifyResponse needs a float
    decoded = verdict_from_answer(answer, TASK)
    assert decoded.failure is not None and decoded.failure.kind is FailureKind.VERIFIER_ERROR


def test_a_run_answer_decodes_to_the_same_rollout_truncation_included() -> None:
    scored = AgentResult(
        response={"output": []},
        verdict=Verdict(reward=1.0, metrics={"steps": 3}),
        model_calls=8,
        tool_calls=7,
        truncated="max_steps",
        timings={"model": 0.5},
        producers=["policy", "user", "policy"],
        policy_versions=[2, 3],
        branches=2,
        retokenized=1,
    )
    decoded = run_result(200, run_answer(TASK, scored), TASK)
    assert (decoded.branches, decoded.retokenized) == (2, 1)  # a compacting harness' shape
    assert decoded.verdict == scored.verdict and decoded.failure is None
    # who produced what, and which policy served it, survive a served agent
    assert decoded.producers == ["policy", "user", "policy"]
    assert decoded.policy_versions == [2, 3]
    assert (decoded.model_calls, decoded.tool_calls, decoded.timings) == (8, 7, {"model": 0.5})
    assert decoded.truncated == "max_steps"  # before: a served agent's truncation was lost
    failed = AgentResult(failure=Failure(FailureKind.MODEL_ERROR, "503"), model_calls=1)
    answer = run_answer(TASK, failed)
    assert "reward" not in answer
    decoded = run_result(200, answer, TASK)
    assert decoded.verdict is None and decoded.failure == failed.failure


def test_a_step_answer_decodes_to_the_same_step() -> None:
    step = StepResult("you see a door", reward=0.25, terminated=True, info={"room": 2})
    assert step_from_answer(step_answer(step)) == step


def test_errors_and_tool_listings_decode_as_encoded() -> None:
    body = error_body(404, "gone", kind="session_lost", param="session")
    assert error_of(body) == ("session_lost", "gone")
    assert error_of(error_body(503, "busy")) == ("server_error", "busy")
    assert error_of({"detail": "Not Found"}) == (None, "Not Found")  # FastAPI (NeMo Gym)
    tools = [{"type": "function", "name": "add", "parameters": {}, "strict": True}]
    assert tools_of(tools_answer(tools, "step")) == (tools, "step")


def test_every_route_an_environment_server_answers_itself_is_reserved_from_tools() -> None:
    assert {"seed_session", "verify", "close_session", "reset", "step", "tools"} <= RESERVED_ROUTES
    assert {
        "health",
        "dataset_size",
        "aggregate_metrics",
    } <= RESERVED_ROUTES  # before: no dataset_size
