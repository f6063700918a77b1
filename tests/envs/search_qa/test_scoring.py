"""HotpotQA/SQuAD answer scoring on known cases, and RULER's match from the package."""

from __future__ import annotations

import pytest

from palaestra.envs.search_qa.scoring import (
    exact_match,
    f1,
    normalize_answer,
    ruler_match,
    score,
)


def test_normalisation_drops_case_punctuation_articles_and_extra_space() -> None:
    assert normalize_answer("  The Eiffel   Tower!") == "eiffel tower"
    assert normalize_answer("An apple, a pear") == "apple pear"
    assert normalize_answer("Theatre") == "theatre"  # "the" only as a whole word


def test_exact_match_ignores_what_normalisation_drops_and_nothing_else() -> None:
    assert exact_match("the Beatles.", "Beatles") == 1.0
    assert exact_match("Beatles band", "Beatles") == 0.0


def test_f1_gives_partial_credit_for_shared_tokens() -> None:
    assert f1("Barack Obama", "Obama") == pytest.approx(2 / 3)
    assert f1("Paris France", "Paris, France") == 1.0
    assert f1("London", "Paris") == 0.0


def test_yes_and_no_get_no_partial_credit_from_f1() -> None:
    assert f1("yes it was", "yes") == 0.0
    assert f1("no", "no") == 1.0
    assert f1("yes", "yes sir") == 0.0


def test_the_best_of_several_gold_answers_counts() -> None:
    scored = score("10th century", ["in the 10th and 11th centuries", "10th century"])
    assert (scored.exact_match, scored.f1) == (1.0, 1.0)


def test_abstaining_is_right_only_on_an_unanswerable_question() -> None:
    assert score("Unanswerable.", []).exact_match == 1.0
    assert score("Unanswerable.", []).abstained is True
    assert score("France", []).exact_match == 0.0
    assert score("", []).exact_match == 0.0
    right_but_abstained = score("unanswerable", ["France"])
    assert (right_but_abstained.exact_match, right_but_abstained.f1) == (0.0, 0.0)


def test_rulers_own_match_looks_for_a_gold_answer_inside_the_prediction() -> None:
    assert ruler_match("It was FRANCE, I think", ["France"]) == 1.0
    assert ruler_match("Spain", ["France", "Gaul"]) == 0.0
    assert ruler_match("unanswerable", []) is None
