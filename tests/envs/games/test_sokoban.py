from __future__ import annotations

import pytest

from palaestra.envs.games.sokoban import Sokoban, parse_map, parse_moves
from tests.envs.games.support import played, puzzles, refused

GAME = Sokoban()
LEVEL = {"map": ["######", "#@$_.#", "#____#", "######"]}


@pytest.mark.parametrize("difficulty", ["easy", "medium"])
def test_generated_levels_start_unsolved_and_the_oracle_solves_them(difficulty: str) -> None:
    for puzzle in puzzles(GAME, difficulty, range(5)):
        state = GAME.start(puzzle)
        assert GAME.progress(state) == 0.0 and GAME.value(state) == 0.0
        solved = played(GAME, puzzle, GAME.solve(puzzle))
        assert GAME.solved(solved) and GAME.value(solved) == 1.0


def test_the_generator_is_deterministic() -> None:
    assert puzzles(GAME, "medium", range(3)) == puzzles(GAME, "medium", range(3))


def test_pushing_walls_and_stuck_boxes_are_refused() -> None:
    state = GAME.start(LEVEL)
    assert "wall" in refused(GAME, state, "up")
    GAME.play(state, "right")  # box to (1, 3)
    assert GAME.show(state).splitlines()[1] == "#_@$.#"
    GAME.play(state, "R")
    assert GAME.solved(state)
    stuck = GAME.start({"map": ["#####", "#@$$#", "#___#", "#####"]})
    assert "cannot move" in refused(GAME, stuck, "right")


def test_moves_are_read_as_words_or_letters() -> None:
    assert parse_moves("up, up, left") == ["U", "U", "L"]
    assert parse_moves("UURD") == ["U", "U", "R", "D"]
    assert parse_moves("I go Right") == ["R"]
    state = GAME.start(LEVEL)
    assert "not a move" in refused(GAME, state, "Your move: up, down, left or right")
    assert parse_map(LEVEL["map"])[3] == (1, 1)
