"""science_world against the real ScienceWorld (its jar on a real JVM), played through the step
agent; every test also checks that no game (JVM) outlives it."""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
from collections.abc import Iterator
from importlib import metadata

import pytest

from palaestra import LocalEnvironmentClient
from palaestra.agents import StepAgent
from palaestra.authoring.reference import reference_checks
from palaestra.collection.tasks import read_tasks
from palaestra.environment.registry import find_environment
from palaestra.envs.science_world import games
from palaestra.envs.science_world.environment import ScienceWorld, clean_command
from palaestra.envs.science_world.games import gold_path, live_games, start, stop_all
from palaestra.errors import ConfigError, EnvironmentTimeout, InvalidTask
from palaestra.types import AgentResult, FailureKind, JsonDict
from tests.support.fake_model import FakeModel, say

pytestmark = pytest.mark.skipif(
    shutil.which("java") is None, reason="no Java runtime (apt-get install default-jre-headless)"
)


@pytest.fixture(autouse=True)
def no_game_outlives_a_test() -> Iterator[None]:
    yield
    assert live_games() == 0


def examples() -> list[JsonDict]:
    entry = find_environment("science_world")
    assert entry.example_tasks is not None
    return [t.row for t in read_tasks(entry.example_tasks)]


def example(name: str) -> JsonDict:
    return next(row for row in examples() if row["task_name"] == name)


def play(row: JsonDict, moves: list[str], max_steps: int = 60) -> AgentResult:
    answers = iter(moves)

    async def go() -> AgentResult:
        client = LocalEnvironmentClient(ScienceWorld())
        try:
            model = FakeModel(lambda params: say(next(answers, "look around")))
            return await StepAgent(max_steps=max_steps).run(row, client, model)
        finally:
            await client.aclose()

    return asyncio.run(go())


def user_texts(result: AgentResult) -> list[str]:
    return [
        str(item["content"])
        for item in result.response["output"]  # type: ignore[index]
        if item.get("role") == "user"
    ]


def test_an_example_passes_the_oracle_and_null_checks() -> None:
    rows = [example("find-animal")]

    async def go() -> list[str]:
        client = LocalEnvironmentClient(ScienceWorld())
        try:
            return [str(check.status) for check in await reference_checks(client, rows)]
        finally:
            await client.aclose()

    assert asyncio.run(go()) == ["pass", "pass"]


def test_the_gold_path_earns_the_score_step_by_step_to_completion() -> None:
    row = example("boil")
    commands = gold_path(row)
    result = play(row, commands)
    verdict = result.verdict
    assert result.failure is None and verdict is not None
    assert verdict.reward == 1.0 and verdict.metrics["completed"] is True
    # The episode ends when the game says the task is done: the path may have moves to spare.
    moves = verdict.metrics["moves"]
    assert verdict.metrics["score"] == 100 and 3 < moves <= len(commands)
    steps = verdict.step_rewards or []
    assert len(steps) == moves and steps[-1] > 0
    assert sum(steps) == pytest.approx(1.0)
    assert sum(1 for s in steps if s > 0) >= 3  # subgoals score along the way: a dense reward


def test_the_first_observation_shows_the_task_the_room_the_score_and_the_commands() -> None:
    result = play(example("boil"), ["look around"], max_steps=1)
    first = user_texts(result)[0]
    assert first.startswith("Your task is to boil")
    assert (
        "\n\nThis outside location is called the outside." in first
        and "[Score: 0 of 100.]" in first
    )
    commands = first.split("Commands (OBJ is a thing you can see): ")[1]
    assert "focus on OBJ" in commands and "reset task" not in commands  # refused: not offered


def test_unknown_commands_are_answered_and_leaving_the_task_is_refused() -> None:
    result = play(example("boil"), ["dance wildly", "reset task", "```\n\n```", "wait"], 4)
    verdict = result.verdict
    assert result.failure is None and verdict is not None
    texts = user_texts(result)
    assert "No known action matches that input." in texts[1]
    assert texts[2].startswith("Refused: 'reset task'") and texts[3].startswith("Refused:")
    assert verdict.metrics["moves"] == 2 and verdict.metrics["refused_actions"] == 2
    assert verdict.reward == 0.0 and verdict.step_rewards == [0.0] * 4


def test_focusing_on_the_wrong_thing_fails_the_task_with_reward_zero() -> None:
    row = example("boil")
    # The gold path up to its focus on the water, then a focus on the air: the task fails.
    commands = gold_path(row)
    focus = next(i for i, c in enumerate(commands) if c.startswith("focus on"))
    result = play(row, [*commands[:focus], "focus on air", "look around"])
    verdict = result.verdict
    assert result.failure is None and verdict is not None
    assert verdict.metrics["failed"] is True and verdict.metrics["score"] < 0
    assert verdict.reward == 0.0 and verdict.metrics["completed"] is False
    steps = verdict.step_rewards or []
    assert len(steps) == focus + 1  # it stopped at the failing focus
    assert sum(steps) == pytest.approx(0.0) and steps[-1] == -sum(steps[:-1])


def test_commands_are_read_from_the_answer_leniently() -> None:
    assert clean_command("<think>hot?</think>\n> Open Door to Kitchen.") == "open door to kitchen"
    assert clean_command("```\nfocus on water\n```") == "focus on water"
    assert clean_command("Action: pick up thermometer") == "pick up thermometer"
    assert clean_command("   \n") == ""


def test_generated_tasks_follow_the_seed_and_draw_from_the_split() -> None:
    rows = list(ScienceWorld().generate_tasks(3, 5))
    assert rows == list(ScienceWorld().generate_tasks(3, 5))
    assert len({r["task_name"] for r in rows}) == 3  # a round of task types before repeats
    test_rows = list(ScienceWorld(split="test", simplifications="easy").generate_tasks(3, 5))
    assert [r["task_name"] for r in test_rows] == [r["task_name"] for r in rows]
    game = start(rows[0]["task_name"], 0)
    try:
        dev, test = games.variations(game, "dev"), games.variations(game, "test")
    finally:
        game.close()
    assert rows[0]["variation"] in dev and test_rows[0]["variation"] in test
    assert rows[0]["split"] == "dev" and test_rows[0]["simplifications"] == "easy"


def test_a_game_stops_its_jvm_when_closed_and_aclose_stops_those_left_behind() -> None:
    game = start("find-animal", 0)
    pid = game.pid
    assert os.path.exists(f"/proc/{pid}") and game.memory_kb() > 50_000
    game.close()
    game.close()  # twice is harmless
    assert not os.path.exists(f"/proc/{pid}")
    left = start("find-animal", 1)  # as a cancelled rollout would leave it
    pid = left.pid
    asyncio.run(ScienceWorld().aclose())
    assert not os.path.exists(f"/proc/{pid}") and live_games() == 0


def test_a_variation_out_of_range_is_refused_and_its_jvm_stopped() -> None:
    with pytest.raises(InvalidTask, match="boil has variations 0 to 29, not 30"):
        start("boil", 30)
    stop_all()


def test_a_bad_task_row_fails_as_invalid_input_naming_the_field() -> None:
    row = {**example("boil"), "variation": -1}
    result = play(row, ["look around"], max_steps=1)
    assert result.failure is not None and result.failure.kind == FailureKind.INVALID_INPUT
    assert "'variation'" in result.failure.reason
    unknown = play({**row, "task_name": "fly-to-the-moon", "variation": 0}, [], max_steps=1)
    assert unknown.failure is not None and "fly-to-the-moon" in unknown.failure.reason


def test_a_missing_jre_or_package_stops_the_run_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(ConfigError, match="split must be one of train, dev, test"):
        ScienceWorld(split="val")
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(ConfigError, match=r"apt-get install default-jre-headless") as caught:
        ScienceWorld()
    assert "\n" not in str(caught.value)
    monkeypatch.undo()
    real = metadata.version

    def version(name: str) -> str:
        if name == "scienceworld":
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(metadata, "version", version)
    with pytest.raises(ConfigError, match=r"pip install --no-deps scienceworld==1\.2\.3") as c:
        ScienceWorld()
    assert "\n" not in str(c.value)


def test_games_beyond_the_limit_wait_for_a_free_slot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(games, "_slots", threading.BoundedSemaphore(1))
    monkeypatch.setattr(games, "SLOT_WAIT", 0.5)
    first = start("find-animal", 0)
    try:
        with pytest.raises(EnvironmentTimeout, match="no free game"):
            start("find-animal", 1)
        assert live_games() == 1  # the second never started a JVM
    finally:
        first.close()
    second = start("find-animal", 1)  # the slot is free again
    second.close()
