"""Which version served an answer: the engine's own when it reports one, else the clock of
the running rollouts, else none (``palaestra.models.versions.served_by``)."""

from __future__ import annotations

from palaestra.models.versions import POLICY_CLOCK, PolicyClock, served_by


def test_an_answer_that_reports_no_version_is_served_by_the_clock_s() -> None:
    token = POLICY_CLOCK.set(PolicyClock(3))
    try:
        assert served_by({"output": [], "metadata": {}}) == 3
        assert served_by({"choices": []}) == 3
        assert served_by({"metadata": {"weight_version": "default"}}) == 3  # SGLang's unset
    finally:
        POLICY_CLOCK.reset(token)


def test_an_engine_s_reported_version_wins_over_the_clock() -> None:
    token = POLICY_CLOCK.set(PolicyClock(3))
    try:
        assert served_by({"policy_version": 5}) == 5
        assert served_by({"weight_version": "6"}) == 6
        assert served_by({"output": [], "metadata": {"weight_version": 7}}) == 7
    finally:
        POLICY_CLOCK.reset(token)


def test_without_a_reported_version_or_a_clock_no_version_is_known() -> None:
    assert served_by({"output": [], "metadata": {}}) is None
    assert served_by({"metadata": {"user": "x"}}) is None
