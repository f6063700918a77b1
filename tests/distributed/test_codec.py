"""What crosses between worker and collector decodes to what the collector would have seen
in process: the same result, the same failure, the same class of raised error."""

from __future__ import annotations

import math

import pytest

from palaestra.collection.records import rollout_row
from palaestra.distributed.codec import (
    decode_error,
    decode_result,
    encode_error,
    encode_raised,
    encode_result,
)
from palaestra.errors import (
    ConfigError,
    ModelAuthError,
    ModelUnreachable,
    RolloutFailure,
    SandboxLimitExceeded,
    VerifierFailure,
)
from palaestra.types import AgentResult, Failure, FailureKind, Verdict

TASK = {"responses_create_params": {"input": "hi"}, "_ng_task_index": 0, "_ng_rollout_index": 0}


def test_a_result_comes_back_field_for_field_and_makes_the_same_row() -> None:
    result = AgentResult(
        response={"id": "r", "output": [{"type": "message", "content": "x"}]},
        verdict=Verdict(reward=0.5, reward_components={"a": 0.5}, metrics={"n": 3, "s": "t"}),
        model_calls=2,
        tool_calls=1,
        truncated="max_steps",
        timings={"model": 0.25},
    )
    back = decode_result(encode_result(result))
    assert back == result
    assert rollout_row(TASK, back, attempt=1) == rollout_row(TASK, result, attempt=1)


def test_a_failed_result_keeps_its_kind_reason_and_mask() -> None:
    failure = Failure(FailureKind.TOOL_ERROR, "boom", masked=False)
    back = decode_result(encode_result(AgentResult(response={"id": "r"}, failure=failure)))
    assert back.failure == failure and back.response == {"id": "r"}


def test_a_reward_that_is_not_a_score_becomes_the_verifier_error_the_collector_records() -> None:
    result = AgentResult(response={"id": "r"}, verdict=Verdict(reward=math.nan))
    with pytest.raises(VerifierFailure) as in_process:
        rollout_row(TASK, result, attempt=1)
    back = decode_result(encode_result(result))  # NaN would have crossed as null
    assert back.verdict is not None and back.verdict.failure is not None
    assert back.verdict.failure.kind == FailureKind.VERIFIER_ERROR
    assert back.verdict.failure.reason == in_process.value.reason


def test_a_result_that_is_not_json_is_the_failure_the_collector_records_for_such_a_row() -> None:
    result = AgentResult(response={"id": "r"}, verdict=Verdict(reward=1.0, metrics={"s": {1}}))
    with pytest.raises(RolloutFailure) as raised:
        decode_result(encode_result(result))
    assert raised.value.kind == FailureKind.INTERNAL_ERROR
    assert raised.value.reason.startswith("the rollout's row cannot be written: TypeError")


@pytest.mark.parametrize(
    "error", [ModelUnreachable("gone"), ModelAuthError("401"), SandboxLimitExceeded("mem", "m")]
)
def test_a_raised_failure_comes_back_as_its_own_class(error: RolloutFailure) -> None:
    with pytest.raises(type(error)) as raised:
        decode_result(encode_raised(error))
    assert (raised.value.reason, raised.value.kind) == (error.reason, error.kind)


def test_any_other_exception_comes_back_as_an_internal_error_named_as_in_process() -> None:
    with pytest.raises(RolloutFailure) as raised:
        decode_result(encode_raised(ValueError("bad")))
    assert type(raised.value) is RolloutFailure
    assert (raised.value.kind, raised.value.reason) == (
        FailureKind.INTERNAL_ERROR,
        "ValueError: bad",
    )


def test_why_a_worker_could_not_start_is_raised_again_as_palaestras_own_error() -> None:
    again = decode_error(encode_error(ModelUnreachable("no model at x")), "worker 0")
    assert isinstance(again, ModelUnreachable) and again.reason == "no model at x"
    other = decode_error(encode_error(KeyError("k")), "worker 1")
    assert (
        isinstance(other, ConfigError) and str(other) == "worker 1 could not start: KeyError: 'k'"
    )
