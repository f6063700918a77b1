from __future__ import annotations

import random

import pytest

from palaestra.envs.games.mastermind import LEVELS, Mastermind, all_codes, parse_guess, pegs
from tests.envs.games.support import played, refused

GAME = Mastermind()


def test_pegs_count_exact_then_misplaced_colours_once() -> None:
    assert pegs("ABCD", "ABCD") == (4, 0)
    assert pegs("AABB", "BBAA") == (0, 4)
    assert pegs("AABC", "ADAA") == (1, 1)


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_the_oracle_cracks_codes_within_the_guesses_allowed(difficulty: str) -> None:
    colours, length, allowed = LEVELS[difficulty]
    codes = all_codes(colours, length)
    sample = codes if difficulty == "easy" else random.Random(1).sample(codes, 8)
    for code in sample:
        puzzle = {"colours": colours, "pegs": length, "code": code, "guesses": allowed}
        actions = GAME.solve(puzzle)
        assert len(actions) <= allowed
        assert GAME.value(played(GAME, puzzle, actions)) == 1.0


def test_bad_colours_and_lengths_are_refused_and_guesses_run_out() -> None:
    puzzle = {"colours": 4, "pegs": 3, "code": "ABC", "guesses": 2}
    state = GAME.start(puzzle)
    assert "not a colour" in refused(GAME, state, "AXB")
    assert "3 letters" in refused(GAME, state, "no idea")
    assert parse_guess("My guess: a, b, d", 3, 4) == "ABD"
    assert parse_guess("I guess CAB", 3, 4) == "CAB"
    GAME.play(state, "AAA")
    outcome = GAME.play(state, "BBB")
    assert outcome.done and GAME.lost(state) and GAME.value(state) == 0.0


def test_information_is_progress() -> None:
    puzzle = {"colours": 6, "pegs": 4, "code": "ABCD", "guesses": 10}
    assert GAME.progress(GAME.start(puzzle)) == 0.0
    assert 0 < GAME.progress(played(GAME, puzzle, ["AABB"])) < 1
