from __future__ import annotations

import pytest

from palaestra.envs.games.core import PARTIAL
from palaestra.envs.games.hanoi import Hanoi, moves_left, parse_move
from tests.envs.games.support import played, refused

GAME = Hanoi()


@pytest.mark.parametrize("disks", [1, 3, 5])
def test_the_oracle_solves_it_in_the_optimal_number_of_moves(disks: int) -> None:
    actions = GAME.solve({"disks": disks})
    assert len(actions) == 2**disks - 1
    state = played(GAME, {"disks": disks}, actions)
    assert GAME.solved(state) and GAME.value(state) == 1.0


def test_a_larger_disk_on_a_smaller_one_or_an_empty_peg_is_refused() -> None:
    state = played(GAME, {"disks": 3}, ["A C"])
    assert "larger" in refused(GAME, state, "A C")
    assert "empty" in refused(GAME, state, "B A")
    assert "itself" in refused(GAME, state, "A A")
    assert "two pegs" in refused(GAME, state, "I would move the small one")


def test_progress_counts_the_optimal_moves_left_both_ways() -> None:
    start = GAME.start({"disks": 3})
    assert GAME.value(start) == 0.0 and moves_left(start["pegs"]) == 7
    good = played(GAME, {"disks": 3}, ["A C"])  # the optimal first move
    bad = played(GAME, {"disks": 3}, ["A B"])  # a move away from the goal
    assert moves_left(good["pegs"]) == 6 and moves_left(bad["pegs"]) == 7
    assert GAME.value(good) == pytest.approx(PARTIAL / 7)
    back = played(GAME, {"disks": 3}, ["A C", "C A"])
    assert GAME.value(back) == 0.0


def test_moves_are_read_leniently_but_not_from_prose_letters() -> None:
    assert parse_move("A C") == (0, 2)
    assert parse_move("a->b") == (0, 1)
    assert parse_move("1 3") == (0, 2)
    assert parse_move("I move a disk from B to C.") == (1, 2)
