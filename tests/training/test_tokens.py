"""Contiguity checks and loss masks on hand-built rollouts (no model)."""

from __future__ import annotations

import pytest

from palaestra.training.tokens import (
    ContiguityError,
    check_contiguity,
    model_calls,
    training_sequence,
)
from palaestra.types import JsonDict, Verdict


def _call(prompt: list[int], generated: list[int], kind: str = "function_call") -> JsonDict:
    return {
        "type": kind,
        "prompt_token_ids": prompt,
        "generation_token_ids": generated,
        "generation_log_probs": [-0.1 * (i + 1) for i in range(len(generated))],
    }


TOOL_OUTPUT: JsonDict = {"type": "function_call_output", "call_id": "c", "output": "5"}


def _rollout(*items: JsonDict) -> JsonDict:
    return {"output": list(items)}


def test_three_contiguous_calls_give_one_sequence_with_every_generated_token_masked_in() -> None:
    response = _rollout(
        _call([1, 2], [3, 4]),
        TOOL_OUTPUT,
        _call([1, 2, 3, 4, 5], [6]),
        {"type": "message", "role": "user", "content": "more"},
        _call([1, 2, 3, 4, 5, 6, 7, 8], [9, 10], kind="message"),
    )
    verdict = Verdict(reward=1.0, reward_components={"a": 1.0}, step_rewards=[0.0, 0.5, 0.5])
    sequence = training_sequence(response, verdict)
    assert sequence.token_ids == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    assert sequence.loss_mask == [0, 0, 1, 1, 0, 1, 0, 0, 1, 1]
    assert sequence.log_probs == [0.0, 0.0, -0.1, -0.2, 0.0, -0.1, 0.0, 0.0, -0.1, -0.2]
    assert sequence.turn_ends == [3, 5, 9] and sequence.prompt_length == 2
    assert sequence.step_rewards == [0.0, 0.5, 0.5] and sequence.reward == 1.0
    assert sequence.reward_components == {"a": 1.0} and sequence.generated_tokens == 5
    assert sequence.contiguity.contiguous and sequence.contiguity.calls == 3


def test_a_re_tokenised_prompt_breaks_at_the_first_differing_token() -> None:
    response = _rollout(_call([1, 2], [3, 4]), TOOL_OUTPUT, _call([1, 2, 3, 40, 5], [6]))
    contiguity = check_contiguity(response)
    assert (contiguity.contiguous, contiguity.break_call, contiguity.break_position) == (
        False,
        1,
        3,
    )
    assert contiguity.reason == (
        "the prompt of model call 1 differs from the prompt and generation of call 0 at "
        "token 3 (expected 4, found 40)"
    )
    with pytest.raises(ContiguityError) as caught:
        training_sequence(response)
    assert caught.value.contiguity.break_position == 3


def test_a_prompt_shorter_than_the_history_breaks_where_it_ends() -> None:
    contiguity = check_contiguity(_rollout(_call([1, 2], [3, 4]), _call([1, 2, 3], [5])))
    assert contiguity.break_position == 3 and contiguity.reason is not None
    assert "found the end" in contiguity.reason


def test_malformed_training_fields_are_a_break_not_a_skip() -> None:
    bad = {**_call([1], [2, 3]), "generation_log_probs": [-0.1]}
    contiguity = check_contiguity(_rollout(_call([1], [2]), bad))
    assert not contiguity.contiguous and contiguity.break_call == 1
    assert contiguity.reason == "output item 1 has 1 log-probs for 2 generated ids"
    with pytest.raises(ContiguityError, match="malformed"):
        model_calls(_rollout({**_call([1], [2]), "prompt_token_ids": ["1"]}))


def test_a_rollout_without_token_ids_or_with_misaligned_step_rewards_is_refused() -> None:
    with pytest.raises(ContiguityError, match="no model call with token ids"):
        training_sequence(_rollout({"type": "message", "role": "assistant", "content": "x"}))
    row = {"reward": 0.5, "step_rewards": [0.1, 0.2]}
    with pytest.raises(ContiguityError, match="2 step rewards for 1 model calls"):
        training_sequence(_rollout(_call([1], [2])), row)
    sequence = training_sequence(_rollout(_call([1], [2])), {"reward": 0.5, "step_rewards": [1]})
    assert (sequence.reward, sequence.step_rewards) == (0.5, [1.0])
