"""science_world against the real ScienceWorld (its jar on a real JVM), played through the step
agent; every test also checks that no game (JVM) outlives it."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from collections.abc import Iterator
from importlib import metadata
from typing import Any

import pytest

from palaestra import LocalEnvironmentClient
from palaestra.agents import StepAgent
from palaestra.authoring.reference import reference_checks
from palaestra.collection.tasks import read_tasks
from palaestra.environment.answers import first_command
from palaestra.environment.finding.registry import find_environment
from palaestra.envs.science_world import games as games_module
from palaestra.envs.science_world.environment import ScienceWorld
from palaestra.envs.science_world.games import Games
from palaestra.errors import ConfigError, EnvironmentTimeout, InvalidTask
from palaestra.types import AgentResult, FailureKind, JsonDict, message_text
from tests.support.fake_model import FakeModel, say

pytestmark = pytest.mark.skipif(
    shutil.which("java") is None, reason="no Java runtime (apt-get install default-jre-headless)"
)


def java_children() -> list[str]:
    done = subprocess.run(["pgrep", "-P", str(os.getpid()), "java"], capture_output=True, text=True)
    return done.stdout.split()


@pytest.fixture(autouse=True)
def no_game_outlives_a_test(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every ``Games`` made during the test (the environments' too) ends it with none alive,
    and no JVM started by this process is left."""
    made: list[Games] = []
    init = Games.__init__

    def remember(self: Games, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(Games, "__init__", remember)
    yield
    assert [g.live() for g in made] == [0] * len(made)
    assert java_children() == []


@pytest.fixture
def games() -> Games:
    return Games(limit=4)


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
        message_text(item)
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


def test_the_gold_path_earns_the_score_step_by_step_to_completion(games: Games) -> None:
    row = example("boil")
    commands = games.gold_path(row)
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


def test_focusing_on_the_wrong_thing_fails_the_task_with_reward_zero(games: Games) -> None:
    row = example("boil")
    # The gold path up to its focus on the water, then a focus on the air: the task fails.
    commands = games.gold_path(row)
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
    assert first_command("<think>hot?</think>\n> Open Door to Kitchen.") == "open door to kitchen"
    assert first_command("```\nfocus on water\n```") == "focus on water"
    assert first_command("Action: pick up thermometer") == "pick up thermometer"
    assert first_command("   \n") == ""


def test_generated_tasks_follow_the_seed_and_draw_from_the_split(games: Games) -> None:
    rows = list(ScienceWorld().generate_tasks(3, 5))
    assert rows == list(ScienceWorld().generate_tasks(3, 5))
    assert len({r["task_name"] for r in rows}) == 3  # a round of task types before repeats
    test_rows = list(ScienceWorld(split="test", simplifications="easy").generate_tasks(3, 5))
    assert [r["task_name"] for r in test_rows] == [r["task_name"] for r in rows]
    game = games.start(rows[0]["task_name"], 0)
    try:
        dev, test = games_module.variations(game, "dev"), games_module.variations(game, "test")
    finally:
        game.close()
    assert rows[0]["variation"] in dev and test_rows[0]["variation"] in test
    assert rows[0]["split"] == "dev" and test_rows[0]["simplifications"] == "easy"


def test_a_game_stops_its_jvm_when_closed_and_aclose_stops_those_left_behind() -> None:
    env = ScienceWorld()
    game = env.games.start("find-animal", 0)
    pid = game.pid
    assert os.path.exists(f"/proc/{pid}") and game.memory_kb() > 50_000
    game.close()
    game.close()  # twice is harmless
    assert not os.path.exists(f"/proc/{pid}")
    left = env.games.start("find-animal", 1)  # as a cancelled rollout would leave it
    pid = left.pid
    asyncio.run(env.aclose())
    assert not os.path.exists(f"/proc/{pid}") and env.games.live() == 0


def test_a_variation_out_of_range_is_refused_and_its_jvm_stopped(games: Games) -> None:
    with pytest.raises(InvalidTask, match="boil has variations 0 to 29, not 30"):
        games.start("boil", 30)
    assert games.stop_all() == 0  # its JVM was already stopped


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


def test_max_games_is_a_whole_number_of_at_least_one() -> None:
    assert ScienceWorld(max_games=8).games.limit == 8
    for bad in (0, -1, "4", 2.5, True, None):
        with pytest.raises(ConfigError, match="max_games must be a whole number >= 1") as caught:
            ScienceWorld(max_games=bad)  # type: ignore[arg-type]
        assert "\n" not in str(caught.value)


def test_games_beyond_the_limit_wait_for_a_free_slot() -> None:
    games = Games(limit=1, slot_wait=0.5)
    first = games.start("find-animal", 0)
    try:
        with pytest.raises(EnvironmentTimeout, match=r"no free game .*\(1 alive at most\)"):
            games.start("find-animal", 1)
        assert games.live() == 1  # the second never started a JVM
    finally:
        first.close()
    second = games.start("find-animal", 1)  # the slot is free again
    second.close()


def test_two_environments_do_not_share_their_games() -> None:
    a, b = ScienceWorld(max_games=1), ScienceWorld(max_games=1)
    a.games.slot_wait = b.games.slot_wait = 0.5
    held = a.games.start("find-animal", 0)
    try:
        with pytest.raises(EnvironmentTimeout, match="no free game"):
            a.games.start("find-animal", 1)  # a is full...
        other = b.games.start("find-animal", 1)  # ...and b still has its slot
        assert (a.games.live(), b.games.live()) == (1, 1)
        asyncio.run(b.aclose())  # b stops its own game, not a's
        assert other.closed and not held.closed and os.path.exists(f"/proc/{held.pid}")
        assert (a.games.live(), b.games.live()) == (1, 0)
    finally:
        asyncio.run(a.aclose())
    assert held.closed and a.games.live() == 0


def test_generating_tasks_again_starts_no_game(monkeypatch: pytest.MonkeyPatch) -> None:
    # the splits' variation lists are the package's fixed data: palaestra test generates its
    # tasks twice, and a JVM for the second listing was waste
    rows = list(ScienceWorld().generate_tasks(3, 7))
    started: list[str] = []
    start = Games.start

    def counted(self: Games, task_name: str, *args: Any, **kwargs: Any) -> Any:
        started.append(task_name)
        return start(self, task_name, *args, **kwargs)

    monkeypatch.setattr(Games, "start", counted)
    assert list(ScienceWorld().generate_tasks(3, 7)) == rows
    assert started == []
