from __future__ import annotations

import re

from palaestra import LocalEnvironmentClient
from palaestra.agents import StepAgent
from palaestra.collection.tasks import read_tasks
from palaestra.environment.finding.registry import find_environment
from palaestra.envs.number_guess.environment import NumberGuess, task
from palaestra.types import JsonDict, message_text
from tests.support.fake_model import FakeModel, say


def bisector() -> FakeModel:
    """Plays the game properly: binary search on the hints."""

    def script(params: JsonDict) -> JsonDict:
        low, high = 1, 100
        for item in params["input"]:
            text = str(item.get("content", ""))
            if m := re.search(r"from (\d+) to (\d+)", text):
                low, high = int(m.group(1)), int(m.group(2))
            if m := re.search(r"(\d+) is wrong: my number is (higher|lower)", text):
                guess = int(m.group(1))
                low, high = (guess + 1, high) if m.group(2) == "higher" else (low, guess - 1)
        return say(str((low + high) // 2))

    return FakeModel(script)


async def test_binary_search_solves_it_with_per_step_rewards() -> None:
    env = LocalEnvironmentClient(NumberGuess())
    result = await StepAgent(max_steps=10).run(task(low=1, high=100, target=37), env, bisector())
    assert result.failure is None and result.verdict is not None
    assert result.verdict.reward == 1.0
    steps = result.verdict.step_rewards
    assert steps is not None and steps[-1] == 1.0 and sum(steps) == 1.0
    assert result.verdict.metrics["guesses"] == len(steps) == result.model_calls
    roles = [i.get("role") for i in result.response["output"]]  # type: ignore[index]
    assert roles[0] == "user" and roles.count("user") == len(steps)  # observations are user turns


async def test_out_of_turns_or_nonsense_scores_zero() -> None:
    env = LocalEnvironmentClient(NumberGuess())
    stubborn = await StepAgent(max_steps=3).run(
        task(low=1, high=10, target=7), env, FakeModel(lambda p: say("5"))
    )
    assert stubborn.verdict is not None and stubborn.verdict.reward == 0.0
    assert stubborn.verdict.step_rewards == [0.0, 0.0, 0.0]
    chatter = await StepAgent(max_steps=2).run(
        task(low=1, high=10, target=7), env, FakeModel(lambda p: say("I think... seven?"))
    )
    assert chatter.verdict is not None and chatter.verdict.metrics["guesses"] == 0
    hint = message_text(chatter.response["output"][2])  # type: ignore[index]
    assert "not a number" in hint


def test_generator_is_deterministic_and_examples_are_valid() -> None:
    env = NumberGuess()
    assert list(env.generate_tasks(20, 3)) == list(env.generate_tasks(20, 3))
    assert list(env.generate_tasks(20, 3)) != list(env.generate_tasks(20, 4))
    entry = find_environment("number_guess")
    assert entry.example_tasks is not None
    rows = [t.row for t in read_tasks(entry.example_tasks)]
    assert len(rows) == 5 and all(r["low"] <= r["target"] <= r["high"] for r in rows)
