from __future__ import annotations

import pytest

from palaestra.envs.games.sudoku import LEVELS, Sudoku, count_solutions, parse_placements
from tests.envs.games.support import played, puzzles, refused

GAME = Sudoku()


@pytest.mark.parametrize("difficulty", ["easy", "medium"])
def test_puzzles_have_one_solution_the_oracle_fills(difficulty: str) -> None:
    for puzzle in puzzles(GAME, difficulty, range(3)):
        blanks = sum(not v for row in puzzle["grid"] for v in row)
        assert 0 < blanks <= LEVELS[difficulty][1]
        assert count_solutions(puzzle["grid"], puzzle["box"], 2) == 1
        state = played(GAME, puzzle, GAME.solve(puzzle))
        assert GAME.solved(state) and GAME.value(state) == 1.0


def test_the_generator_is_deterministic() -> None:
    assert puzzles(GAME, "medium", range(2)) == puzzles(GAME, "medium", range(2))
    assert puzzles(GAME, "medium", range(1)) != puzzles(GAME, "medium", range(1, 2))


def test_clashes_and_clues_are_refused_a_wrong_fit_earns_nothing() -> None:
    [puzzle] = puzzles(GAME, "easy", range(1))
    grid, solution = puzzle["grid"], puzzle["solution"]
    r, c = next((r, c) for r in range(4) for c in range(4) if not grid[r][c])
    clue_r, clue_c = next((r, c) for r in range(4) for c in range(4) if grid[r][c])
    state = GAME.start(puzzle)
    assert "given" in refused(GAME, state, f"r{clue_r + 1}c{clue_c + 1}=1")
    in_row = next(v for v in grid[r] if v)
    assert "clashes" in refused(GAME, state, f"r{r + 1}c{c + 1}={in_row}")
    assert "off the grid" in refused(GAME, state, "r5c1=1")
    GAME.play(state, f"r{r + 1}c{c + 1}={solution[r][c]}")
    assert GAME.progress(state) == pytest.approx(1 / 10) or GAME.progress(state) > 0


def test_placements_are_read_in_several_forms() -> None:
    assert parse_placements("r2c3=4") == [(1, 2, 4)]
    assert parse_placements("Row 2, column 3: 4 and r1c1 = 2") == [(1, 2, 4), (0, 0, 2)]
    assert parse_placements("2 3 4") == [(1, 2, 4)]
