"""Which version served an answer: the engine's own when it reports one, else the rollout's
policy clock, else none (``palaestra.models.versions.served_by``)."""

from __future__ import annotations

from palaestra.models.versions import PolicyClock, served_by


def test_an_answer_that_reports_no_version_is_served_by_the_clock_s() -> None:
    clock = PolicyClock(3)
    assert served_by({"output": [], "metadata": {}}, clock) == 3
    assert served_by({"choices": []}, clock) == 3
    assert served_by({"metadata": {"weight_version": "default"}}, clock) == 3  # SGLang's unset


def test_an_engine_s_reported_version_wins_over_the_clock() -> None:
    clock = PolicyClock(3)
    assert served_by({"policy_version": 5}, clock) == 5
    assert served_by({"weight_version": "6"}, clock) == 6
    assert served_by({"output": [], "metadata": {"weight_version": 7}}, clock) == 7


def test_without_a_reported_version_or_a_clock_no_version_is_known() -> None:
    assert served_by({"output": [], "metadata": {}}, None) is None
    assert served_by({"metadata": {"user": "x"}}, PolicyClock()) is None
