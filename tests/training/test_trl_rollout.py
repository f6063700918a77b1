"""TRL's rollout_func contract on palaestra rollouts, without trl: what GRPOTrainer 1.16 hands
the function (each prompt repeated num_generations times in a row, the trainer) and what it
reads back (one entry per prompt: prompt_ids, completion_ids, logprobs, env_mask, and extra
fields for the reward functions). The same against the real trl is in test_trl_rollout_real.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from palaestra.errors import ConfigError
from palaestra.training import TrlRolloutFunc
from palaestra.training.trl_rollout import TASK_COLUMN
from tests.support.scripted_model import ScriptedModelServer
from tests.support.toy_tokenizer import ToyTokenizer
from tests.training.test_rollouts import (
    BROKEN,
    TASKS,
    UNSEEDABLE,
    Adder,
    adder_script,
    policy,
)

END = 2  # the toy tokenizer's <|im_end|>


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(adder_script, api="chat", tokenizer=ToyTokenizer()) as running:
        yield running


def trainer(step: int = 0) -> Any:
    return SimpleNamespace(
        processing_class=SimpleNamespace(eos_token_id=END), state=SimpleNamespace(global_step=step)
    )


def test_one_entry_per_prompt_in_order_with_the_rollout_split_at_its_prompt(
    server: ScriptedModelServer,
) -> None:
    with TrlRolloutFunc(Adder, tasks=[*TASKS, BROKEN], policy=policy(server)) as rollout:
        rows = rollout.rows()
        assert rows[0]["prompt"] == [{"role": "user", "content": "What is 2+3?"}]
        assert TASK_COLUMN in rows[0]
        # TRL repeats each prompt num_generations (here 2) times in a row.
        prompts = [row["prompt"] for row in (rows[1], rows[1], rows[3], rows[3], rows[0], rows[0])]
        out = rollout(prompts, trainer())
    assert set(out) == {
        "prompt_ids",
        "completion_ids",
        "logprobs",
        "env_mask",
        "env_reward",
        "env_failure",
        "env_producers",
        "env_branches",
        "env_untrained_tokens",
        "env_policy_span",
    }
    assert all(len(values) == 6 for values in out.values())
    assert out["env_branches"] == [1] * 6 and out["env_untrained_tokens"] == [0] * 6
    assert out["env_policy_span"] == [None] * 6  # no policy version was given
    # who produced each output item: the policy's call, the tool's output, the policy's answer
    for i in (0, 1, 4, 5):
        assert out["env_producers"][i] == ["policy", "tool", "policy"]
    assert out["env_reward"] == [1.0, 1.0, None, None, 1.0, 1.0]
    assert out["env_failure"][:2] == [None, None]
    assert out["env_failure"][2].startswith("verifier_error: the task has no answer key")
    for i in (0, 1, 4, 5):
        completion, mask = out["completion_ids"][i], out["env_mask"][i]
        assert len(completion) == len(mask) == len(out["logprobs"][i])
        assert 0 < sum(mask) < len(mask)  # generated tokens train, the tool output does not
        assert all(p != 0.0 for p, bit in zip(out["logprobs"][i], mask, strict=True) if bit)
        assert all(p == 0.0 for p, bit in zip(out["logprobs"][i], mask, strict=True) if not bit)
        assert completion[-1] == END  # the last turn closed: TRL does not call it truncated
    # Both rollouts of a task start from the same prompt (the task in the policy's template).
    assert out["prompt_ids"][0] == out["prompt_ids"][1] != out["prompt_ids"][4]
    # A failed rollout is masked whole, never a reward of 0.
    for i in (2, 3):
        assert out["completion_ids"][i] and not any(out["env_mask"][i])
        assert out["prompt_ids"][i]


def test_the_reward_function_hands_trl_the_environment_reward_and_logs_failures(
    server: ScriptedModelServer,
) -> None:
    logged: list[tuple[str, float]] = []
    with TrlRolloutFunc(Adder, tasks=TASKS, policy=policy(server)) as rollout:
        rewards = rollout.reward(
            prompts=[],
            completions=[],
            env_reward=[1.0, None],
            log_metric=lambda *a: logged.append(a),
        )
    assert rewards == [1.0, None]
    assert logged == [("palaestra/failed", 0.5)]


def test_a_prompt_as_a_datasets_column_returns_it_with_null_fields_still_maps(
    server: ScriptedModelServer,
) -> None:
    with TrlRolloutFunc(Adder, tasks=TASKS, policy=policy(server)) as rollout:
        prompt = [{"role": "user", "content": "What is 4+4?", "tool_calls": None}]
        out = rollout([prompt], trainer())
        assert out["env_reward"] == [1.0]
        with pytest.raises(ConfigError, match="not one of the rollout function's tasks"):
            rollout([[{"role": "user", "content": "What is 9+9?"}]], trainer())


def test_exclude_and_group_size_are_refused_with_why() -> None:
    with pytest.raises(ConfigError, match="one completion per prompt"):
        TrlRolloutFunc(Adder, tasks=TASKS, on_failure="exclude")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="num_generations"):
        TrlRolloutFunc(Adder, tasks=TASKS, group_size=4)


def test_tasks_with_one_prompt_but_different_answers_are_refused() -> None:
    twin = {**TASKS[0], "answer": 6}
    with pytest.raises(ConfigError, match="tasks 0 and 3 have the same prompt"):
        TrlRolloutFunc(Adder, tasks=[*TASKS, twin], policy="http://127.0.0.1:9/v1")


def test_refresh_gets_the_trainer_when_its_step_advanced_and_its_policy_is_used(
    server: ScriptedModelServer,
) -> None:
    refreshed: list[int] = []

    def refresh(current: Any) -> Any:
        refreshed.append(current.state.global_step)
        return policy(server, token_mode=True)

    with TrlRolloutFunc(Adder, tasks=TASKS, policy=policy(server), refresh=refresh) as rollout:
        prompt = rollout.rows()[0]["prompt"]
        rollout([prompt], trainer(0))
        first = rollout.sampler.sampler.model
        rollout([prompt], trainer(0))
        assert refreshed == [] and rollout.sampler.sampler.model is first
        rollout([prompt], trainer(1))
        assert refreshed == [1] and rollout.sampler.sampler.model is not first


def test_a_rollout_that_failed_before_any_model_call_still_gives_trl_tokens_all_masked(
    server: ScriptedModelServer,
) -> None:
    with TrlRolloutFunc(Adder, tasks=[UNSEEDABLE], policy=policy(server)) as rollout:
        prompt = rollout.rows()[0]["prompt"]
        out = rollout([prompt, prompt], trainer())
    assert out["prompt_ids"] == [[END], [END]] and out["completion_ids"] == [[END], [END]]
    assert out["env_mask"] == [[0], [0]] and out["logprobs"] == [[0.0], [0.0]]
    assert out["env_reward"] == [None, None]
    assert out["env_failure"][0].startswith("env_error: ")
