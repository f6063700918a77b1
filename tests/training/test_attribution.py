"""The loss mask and the producers agree: a token is trained on only inside an item the policy
produced, whatever else carries token ids."""

from __future__ import annotations

import pytest

from palaestra.training.tokens import ContiguityError, training_sequence
from palaestra.types import JsonDict


def _call(prompt: list[int], generated: list[int], **item: object) -> JsonDict:
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "x"}],
        "prompt_token_ids": prompt,
        "generation_token_ids": generated,
        "generation_log_probs": [-0.5] * len(generated),
        **item,
    }


RESPONSE: JsonDict = {
    "output": [
        _call([1, 2], [3, 4]),
        {"type": "message", "role": "user", "content": "more"},
        _call([1, 2, 3, 4, 9, 9], [5]),
    ]
}


def test_the_policy_s_items_are_trained_and_nothing_between_them() -> None:
    sequence = training_sequence(RESPONSE, producers=["policy", "user", "policy"])
    assert sequence.loss_mask == [0, 0, 1, 1, 0, 0, 1]


def test_token_ids_on_an_item_the_policy_did_not_produce_are_refused() -> None:
    # e.g. a simulated user on the same token-capturing server, its answer pasted in whole
    with pytest.raises(ContiguityError, match="produced by 'user', not the policy") as caught:
        training_sequence(RESPONSE, producers=["policy", "user", "user"])
    assert caught.value.contiguity.break_call == 1


def test_a_row_s_producers_are_read_from_its_facts() -> None:
    row: JsonDict = {"reward": 1.0, "_palaestra": {"producers": ["policy", "user", "tool"]}}
    with pytest.raises(ContiguityError, match="produced by 'tool'"):
        training_sequence(RESPONSE, row)
    # producers not aligned with the output (an older or foreign row): not used
    row["_palaestra"]["producers"] = ["policy"]
    assert training_sequence(RESPONSE, row).reward == 1.0


def test_trl_s_environment_factory_refuses_an_environment_with_a_simulated_user() -> None:
    from palaestra.errors import ConfigError
    from palaestra.training.trl import TrlEnvironment
    from tests.support.user_envs import Interview

    with pytest.raises(ConfigError, match=r"has a simulated user.*use TrlRolloutFunc"):
        TrlEnvironment(Interview())


def test_openenv_s_harness_refuses_an_environment_with_a_simulated_user() -> None:
    pytest.importorskip("openenv")  # the harness adapter's dependency (a peer venv in CI)
    from palaestra.errors import ConfigError
    from palaestra.training.openenv import PalaestraSessionFactory
    from tests.support.user_envs import Interview

    with pytest.raises(ConfigError, match=r"has a simulated user.*palaestra serve openenv"):
        PalaestraSessionFactory(Interview())
