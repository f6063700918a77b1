from __future__ import annotations

import asyncio

import pytest

from palaestra import LocalEnvironmentClient
from palaestra.agents import StepAgent
from palaestra.authoring.reference import reference_checks
from palaestra.collection.tasks import read_tasks
from palaestra.environment.finding.registry import find_environment
from palaestra.envs.games.environment import GAMES, Games, task
from palaestra.errors import ConfigError
from palaestra.types import AgentResult, JsonDict, message_text
from tests.envs.games.test_wordle import HAVE_WORDS
from tests.support.fake_model import FakeModel, say


def examples() -> list[JsonDict]:
    entry = find_environment("games")
    assert entry.example_tasks is not None
    return [t.row for t in read_tasks(entry.example_tasks)]


def test_tasks_are_generated_by_seed_every_game_in_turn() -> None:
    env = Games(difficulty="medium")
    rows = list(env.generate_tasks(12, 5))
    assert rows == list(Games(difficulty="medium").generate_tasks(12, 5))
    assert rows != list(env.generate_tasks(12, 6))
    assert [r["game"] for r in rows] == list(GAMES) * 2
    assert {r["difficulty"] for r in rows} == {"medium"}
    only = list(Games(game="hanoi,sokoban", difficulty="hard").generate_tasks(3, 1))
    assert [r["game"] for r in only] == ["hanoi", "sokoban", "hanoi"]


def test_unknown_games_and_difficulties_are_refused_in_one_line() -> None:
    for bad in ({"game": "chess"}, {"difficulty": "extreme"}):
        with pytest.raises(ConfigError) as caught:
            Games(**bad)
        assert "\n" not in str(caught.value)


def test_the_examples_cover_every_game_and_pass_the_oracle_and_null_checks() -> None:
    rows = examples()
    assert {r["game"] for r in rows} == set(GAMES)
    if not HAVE_WORDS:
        rows = [r for r in rows if r["game"] != "wordle"]

    async def go() -> list[str]:
        client = LocalEnvironmentClient(Games())
        try:
            return [str(check.status) for check in await reference_checks(client, rows)]
        finally:
            await client.aclose()

    assert asyncio.run(go()) == ["pass", "pass"]


def play(row: JsonDict, moves: list[str], max_steps: int = 40) -> AgentResult:
    answers = iter(moves)

    async def go() -> AgentResult:
        client = LocalEnvironmentClient(Games())
        try:
            model = FakeModel(lambda params: say(next(answers, "I give up.")))
            return await StepAgent(max_steps=max_steps).run(row, client, model)
        finally:
            await client.aclose()

    return asyncio.run(go())


def test_the_step_agent_playing_the_solution_wins_with_step_rewards_adding_up() -> None:
    row = task("hanoi", "easy", {"disks": 3})
    result = play(row, ["A C", "nonsense", "C C", *GAMES["hanoi"].solve(row["puzzle"])[1:]])
    verdict = result.verdict
    assert result.failure is None and verdict is not None
    assert verdict.reward == 1.0 and verdict.metrics["solved"] is True
    assert verdict.metrics["moves"] == 7 and verdict.metrics["illegal_actions"] == 2
    assert verdict.step_rewards is not None and sum(verdict.step_rewards) == pytest.approx(1.0)
    observations = [i for i in result.response["output"] if i.get("role") == "user"]  # type: ignore[index]
    assert "Illegal:" in message_text(observations[2])  # the refusal is what the model reads


def test_an_unsolved_game_keeps_partial_credit_below_one_half() -> None:
    row = task("hanoi", "medium", {"disks": 4})
    result = play(row, ["A B", "A C", "B C"], max_steps=3)
    verdict = result.verdict
    assert verdict is not None and result.truncated == "max_steps"
    assert 0 < verdict.reward < 0.5 and verdict.metrics["solved"] is False
    assert sum(verdict.step_rewards or []) == pytest.approx(verdict.reward)


def test_every_game_generates_solvable_hard_puzzles() -> None:
    games = [name for name in GAMES if HAVE_WORDS or name != "wordle"]
    rows = list(Games(game=",".join(games), difficulty="hard").generate_tasks(len(games), 2))
    for row in rows:
        game = GAMES[row["game"]]
        state = game.start(row["puzzle"])
        assert game.value(state) == 0.0
        for action in game.solve(row["puzzle"]):
            game.play(state, action)
        assert game.value(state) == 1.0, row["game"]
