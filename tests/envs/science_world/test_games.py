"""ScienceWorld's moves as a turn plays them, against the package's own ``step`` (real JVMs)."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from palaestra.environment.sessions import Session
from palaestra.envs.science_world.environment import ScienceWorld
from palaestra.envs.science_world.games import game_of
from tests.envs.science_world.test_environment import example

pytestmark = pytest.mark.skipif(
    shutil.which("java") is None, reason="no Java runtime (apt-get install default-jre-headless)"
)

GOLD_PATH = [
    "open door to hallway",
    "go to hallway",
    "open door to kitchen",
    "go to kitchen",
    "open door to outside",
    "go to outside",
    "look around",
    "focus on egg giant tortoise",
    "pick up egg giant tortoise",
    "open door to kitchen",
    "go to kitchen",
    "open door to bathroom",
    "go to bathroom",
    "move egg giant tortoise egg in inventory to green box",
]
"""The simulator's gold path of the ``find-animal`` example (``Games.gold_path``)."""
ASKED = {
    "reset",
    "getTaskDescription",
    "getPossibleActions",
    "step",
    "getScore",
    "getCompleted",
    "getNumMoves",
}
"""What a turn needs of the simulator: the first turn the task and its commands, then the move, its
score, and whether the game is over."""


class Asked:
    """The simulator's Python side, noting the name of each method asked of it."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.names: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        self.names.add(name)
        return getattr(self.server, name)


def test_a_turn_asks_only_for_the_move_and_plays_as_the_packages_step() -> None:
    row = example("find-animal")
    environment = ScienceWorld(max_games=2)
    session = Session("s", row, environment.seed(row))
    theirs = environment.games.start(*game_of(row))
    try:
        asked = Asked(session.state["game"].env.server)
        session.state["game"].env.server = asked
        assert theirs.env.reset()[0].strip() in environment.reset(session)
        rewards = []
        for command in GOLD_PATH:
            result = environment.step(session, command)
            observation, _, over, info = theirs.env.step(command)
            assert result.observation.startswith(observation.strip()), command
            assert (result.terminated, session.state["score"]) == (over, info["score"]), command
            rewards.append(result.reward)
        assert info["score"] == 100 and over
    finally:
        environment.close(session)
        environment.games.stop_all()
    assert sum(rewards) == pytest.approx(1.0)
    assert asked.names <= ASKED, asked.names - ASKED  # no room, inventory or action listing
