from __future__ import annotations

import pytest

from palaestra.envs.games.minesweeper import LETTERS, Minesweeper, lay, neighbours, parse_cell
from tests.envs.games.support import played, puzzles, refused

GAME = Minesweeper()


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_the_oracle_opens_every_safe_cell(difficulty: str) -> None:
    for puzzle in puzzles(GAME, difficulty, range(10)):
        state = played(GAME, puzzle, GAME.solve(puzzle))
        assert GAME.solved(state) and GAME.value(state) == 1.0


def test_the_first_cell_is_safe_and_opens_an_area_anywhere() -> None:
    [puzzle] = puzzles(GAME, "hard", range(1))
    for first in ("A1", "H8", "D4"):
        state = played(GAME, puzzle, [first])
        r, c = parse_cell(first, 8, 8)
        assert not GAME.lost(state)
        assert not (neighbours(state, (r, c)) | {(r, c)}) & lay(state)
        assert len(state["open"]) > 1


def test_a_mine_loses_and_scores_zero() -> None:
    [puzzle] = puzzles(GAME, "easy", range(1))
    state = played(GAME, puzzle, ["C3"])
    r, c = sorted(lay(state))[0]
    outcome = GAME.play(state, f"{LETTERS[c]}{r + 1}")
    assert outcome.done and GAME.lost(state) and GAME.value(state) == 0.0


def test_open_cells_and_off_board_cells_are_refused() -> None:
    [puzzle] = puzzles(GAME, "easy", range(1))
    state = played(GAME, puzzle, ["C3"])
    assert "already open" in refused(GAME, state, "C3")
    assert "off the board" in refused(GAME, state, "F2")
    assert "one cell" in refused(GAME, state, "let me think")
    assert parse_cell("open b4 please", 5, 5) == (3, 1)
    assert parse_cell("4B", 5, 5) == (3, 1)
    assert parse_cell("On a 5x5 board I pick B2", 5, 5) == (1, 1)
