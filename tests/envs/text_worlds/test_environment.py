"""text_worlds against the real TextWorld: the example games, played through the step agent."""

from __future__ import annotations

import asyncio
from importlib import metadata

import pytest

from palaestra import LocalEnvironmentClient
from palaestra.agents import StepAgent
from palaestra.authoring.reference import reference_checks
from palaestra.collection.tasks import read_tasks
from palaestra.environment.answers import first_command
from palaestra.environment.finding.registry import find_environment
from palaestra.envs.text_worlds.environment import (
    TextWorlds,
    clean_feedback,
    pick_command,
)
from palaestra.envs.text_worlds.worlds import walkthrough, world_of
from palaestra.errors import ConfigError
from palaestra.types import AgentResult, FailureKind, JsonDict, message_text
from tests.support.fake_model import FakeModel, say


def examples() -> list[JsonDict]:
    entry = find_environment("text_worlds")
    assert entry.example_tasks is not None
    return [t.row for t in read_tasks(entry.example_tasks)]


def play(
    row: JsonDict, moves: list[str], max_steps: int = 40, env: TextWorlds | None = None
) -> AgentResult:
    answers = iter(moves)

    async def go() -> AgentResult:
        client = LocalEnvironmentClient(env or TextWorlds())
        try:
            model = FakeModel(lambda params: say(next(answers, "look")))
            return await StepAgent(max_steps=max_steps).run(row, client, model)
        finally:
            await client.aclose()

    return asyncio.run(go())


def user_texts(result: AgentResult) -> list[str]:
    return [
        message_text(item)
        for item in result.response["output"]  # type: ignore[index]
        if item.get("role") == "user"
    ]


def test_the_examples_pass_the_oracle_and_null_checks() -> None:
    rows = examples()[:3]

    async def go() -> list[str]:
        client = LocalEnvironmentClient(TextWorlds())
        try:
            return [str(check.status) for check in await reference_checks(client, rows)]
        finally:
            await client.aclose()

    assert asyncio.run(go()) == ["pass", "pass"]


def test_the_walkthrough_earns_the_game_score_step_by_step() -> None:
    row = examples()[0]
    commands = walkthrough(world_of(row))
    result = play(row, commands)
    verdict = result.verdict
    assert result.failure is None and verdict is not None
    assert verdict.reward == 1.0 and verdict.metrics["won"] is True
    top = verdict.metrics["max_score"]
    assert top >= 2  # a cooking quest scores each step of the recipe: a dense reward
    steps = verdict.step_rewards or []
    assert len(steps) == len(commands)
    assert [r for r in steps if r] == pytest.approx([1 / top] * top)
    assert verdict.metrics["moves"] == len(commands)


def test_observations_show_the_goal_the_score_and_the_commands_the_game_accepts() -> None:
    row = examples()[1]
    result = play(row, ["look"], max_steps=1)
    first = user_texts(result)[0]
    assert "cookbook" in first.lower()  # the goal of a cooking game
    assert "[Score: 0 of " in first and "Commands you can use: " in first
    assert first.startswith("You are hungry!")  # the title banner is gone
    assert "\n>" not in first  # and the prompt
    commands = first.split("Commands you can use: ")[1].split("\n")[0].split("; ")
    assert "look" in commands and "inventory" in commands
    hidden = play(row, ["look"], max_steps=1, env=TextWorlds(admissible=False))
    assert "Commands you can use" not in user_texts(hidden)[0]


def test_a_wrong_command_is_answered_by_the_game_and_meta_commands_are_refused() -> None:
    row = examples()[2]
    result = play(row, ["dance wildly", "restart", "```\n\n```", "<think>hm</think>"], 4)
    verdict = result.verdict
    assert result.failure is None and verdict is not None
    texts = user_texts(result)
    assert "not a verb I recognise" in texts[1]
    assert texts[2].startswith("Refused: 'restart'") and texts[3].startswith("Refused:")
    assert verdict.metrics["moves"] == 1 and verdict.metrics["refused_actions"] == 3
    assert verdict.reward == 0.0 and verdict.step_rewards == [0.0] * 4


def test_a_lost_game_ends_the_episode_with_the_score_so_far() -> None:
    row = examples()[0]
    commands = walkthrough(world_of(row))
    # Eating the meal's ingredient before preparing the meal loses a cooking game.
    ingredient = next(c for c in commands if c.startswith("take ")).split(" from ")[0][5:]
    before_meal = commands[: commands.index("prepare meal")]
    result = play(row, [*before_meal, f"eat {ingredient}", "look"])
    verdict = result.verdict
    assert verdict is not None and verdict.metrics["lost"] is True
    assert verdict.metrics["won"] is False and 0 < verdict.reward < 1
    assert len(verdict.step_rewards or []) == len(before_meal) + 1  # it stopped there
    assert sum(verdict.step_rewards or []) == pytest.approx(verdict.reward)


def test_commands_are_read_from_the_answer_leniently() -> None:
    assert first_command("<think>north?</think>\n> Go  North.") == "go north"
    assert first_command("```\ntake red apple\n```") == "take red apple"
    assert first_command("Command: open fridge") == "open fridge"
    assert first_command('"examine cookbook"') == "examine cookbook"
    assert first_command("   \n") == ""
    banner = " ___ \n|$$$$|\n  \\$$  |  \\|    \\\n\nWelcome!\n\n\n>  -= Kitchen =-0/1\nA kitchen."
    assert clean_feedback(banner) == "Welcome!\n\nA kitchen."


def test_an_accepted_command_named_in_a_sentence_is_the_one_played() -> None:
    here = ["go north", "take knife from counter", "take knife", "look"]
    assert pick_command("I will take the knife from the counter.", here) == here[1]
    assert pick_command("Maybe look, then go north", here) == "look"
    assert pick_command("take knife", here) == "take knife"
    assert pick_command("dance with the knife", here) == "dance with the knife"
    row = examples()[0]
    sentences = [f"I think I should {c} now." for c in walkthrough(world_of(row))]
    verdict = play(row, sentences).verdict
    assert verdict is not None and verdict.reward == 1.0


def test_generated_tasks_follow_the_seed_and_the_arguments() -> None:
    env = TextWorlds(difficulty="medium")
    rows = list(env.generate_tasks(4, 7))
    assert rows == list(TextWorlds(difficulty="medium").generate_tasks(4, 7))
    assert rows != list(env.generate_tasks(4, 8))
    assert {r["world"]["settings"]["go"] for r in rows} == {6}
    custom = next(TextWorlds("custom", "hard", world_size="4", quest_length=2).generate_tasks(1, 0))
    assert custom["world"]["settings"] == {"world_size": 4, "objects": 15, "quest_length": 2}
    assert custom["difficulty"] == "hard"


def test_bad_arguments_are_refused_in_one_line() -> None:
    for bad in (
        {"kind": "zork"},
        {"difficulty": "extreme"},
        {"quest_length": 4},
        {"world_size": 5},
        {"kind": "custom", "world_size": 0},
        {"admissible": "maybe"},
    ):
        with pytest.raises(ConfigError) as caught:
            TextWorlds(**bad)  # type: ignore[arg-type]
        assert "\n" not in str(caught.value)


def test_a_missing_engine_stops_the_run_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    real = metadata.version

    def version(name: str) -> str:
        if name == "jericho":
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(metadata, "version", version)
    with pytest.raises(ConfigError, match=r"needs jericho: bash scripts/install\.sh") as caught:
        TextWorlds()
    assert "\n" not in str(caught.value)


def test_a_task_without_a_world_fails_as_an_invalid_task() -> None:
    row = {**examples()[0], "world": {"kind": "cooking", "settings": {}, "seed": -1}}
    result = play(row, ["look"], max_steps=1)
    assert result.failure is not None and result.failure.kind == FailureKind.INVALID_INPUT
    assert "world.seed" in result.failure.reason
