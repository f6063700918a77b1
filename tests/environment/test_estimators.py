"""pass@k and pass^k against brute force: every k-subset of a task's rollouts, counted."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest

from palaestra.evaluate import majority_vote, pass_at_k, pass_hat_k


def brute_force(n: int, c: int, k: int) -> tuple[Fraction, Fraction]:
    """(share of k-subsets with a pass, share of k-subsets that all pass)."""
    rollouts = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(rollouts, k))
    some = Fraction(sum(any(s) for s in subsets), len(subsets))
    every = Fraction(sum(all(s) for s in subsets), len(subsets))
    return some, every


@pytest.mark.parametrize("n", range(1, 9))
def test_pass_at_k_and_pass_hat_k_are_the_shares_of_k_subsets(n: int) -> None:
    for c in range(n + 1):
        for k in range(1, n + 1):
            some, every = brute_force(n, c, k)
            assert pass_at_k(n, c, k) == pytest.approx(float(some), abs=1e-12), (n, c, k)
            assert pass_hat_k(n, c, k) == pytest.approx(float(every), abs=1e-12), (n, c, k)


def test_pass_at_1_and_pass_hat_1_are_the_pass_rate() -> None:
    assert pass_at_k(8, 3, 1) == pass_hat_k(8, 3, 1) == pytest.approx(3 / 8)


@pytest.mark.parametrize(("n", "c", "k"), [(2, 0, 3), (3, 4, 1), (3, 1, 0)])
def test_a_k_beyond_the_rollouts_is_refused_rather_than_guessed(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError, match="1 <= k <= n"):
        pass_at_k(n, c, k)
    with pytest.raises(ValueError, match="1 <= k <= n"):
        pass_hat_k(n, c, k)


def test_the_most_frequent_answer_wins_the_vote_and_a_tie_goes_to_the_first_seen() -> None:
    assert majority_vote([("4", True), ("5", False), ("4", True)])
    assert not majority_vote([("5", False), ("4", True), ("5", False)])
    assert not majority_vote([("5", False), ("4", True)])  # tie: "5" came first
    assert not majority_vote([])
