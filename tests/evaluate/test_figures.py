"""A run's figures: values, n, failures and the reading of failures."""

from __future__ import annotations

from pathlib import Path

import pytest

from palaestra.evaluate import run_figures
from tests.evaluate.synthetic import write_run


def test_failures_are_left_out_by_default_and_read_as_zero_when_asked(tmp_path: Path) -> None:
    out = write_run(
        tmp_path / "r.jsonl",
        {0: [1.0, 1.0], 1: [0.0, "timeout"], 2: ["model_error", "timeout"], 3: [1.0, 0.0]},
    )
    excluded = run_figures(out)
    mean = excluded.figure("mean reward")
    assert mean.value == pytest.approx((1.0 + 0.0 + 0.5) / 3)  # task 2 has no reward
    assert (mean.tasks, mean.rollouts, mean.failed, mean.masked) == (3, 5, 3, 3)
    assert mean.reading == excluded.reading == "failures excluded"
    zero = run_figures(out, failures_as_zero=True)
    mean = zero.figure("mean reward")
    assert mean.value == pytest.approx((1.0 + 0.0 + 0.0 + 0.5) / 4)
    assert (mean.tasks, mean.rollouts) == (4, 8)
    assert mean.reading == zero.reading == "failures as 0"
    assert excluded.failure_kinds == {"timeout": 2, "model_error": 1}


def test_pass_at_k_leaves_out_tasks_with_fewer_rollouts_and_says_so(tmp_path: Path) -> None:
    out = write_run(tmp_path / "r.jsonl", {0: [1.0, 0.0, 0.0], 1: [0.0, "timeout", 0.0]})
    figures = run_figures(out)
    assert [f.name for f in figures.figures] == ["mean reward", "pass@1", "pass@3", "pass^3"]
    pass3 = figures.figure("pass@3")
    assert (pass3.value, pass3.tasks, pass3.note) == (
        1.0,
        1,
        "1 tasks with fewer than 3 rollouts left out",
    )
    assert run_figures(out, failures_as_zero=True).figure("pass@3").value == 0.5
    assert figures.figure("pass@1").value == pytest.approx((1 / 3 + 0) / 2)


def test_every_figure_carries_a_named_interval_and_the_headline_one_for_0_1_is_wilson(
    tmp_path: Path,
) -> None:
    out = write_run(tmp_path / "r.jsonl", {t: [float(t % 3 == 0)] for t in range(30)})
    mean = run_figures(out).figure("mean reward")
    assert mean.interval is not None and mean.interval.method == "wilson"
    assert mean.bootstrap is not None and mean.bootstrap.method == "bootstrap"
    assert mean.interval.low < 0.4 < mean.interval.high
    assert "n=30 tasks/30 rollouts" in mean.describe()


def test_verifier_metrics_get_figures_over_scored_rollouts(tmp_path: Path) -> None:
    metrics = {
        t: [{"exact": t % 2 == 0, "length": 10.0 * (t + 1)}, {"exact": False, "length": 0.0}]
        for t in range(4)
    }
    out = write_run(tmp_path / "r.jsonl", {t: [1.0, 0.0] for t in range(4)}, metrics=metrics)
    figures = run_figures(out, failures_as_zero=True)
    assert figures.figure("exact").value == pytest.approx(0.25)
    assert figures.figure("length").value == pytest.approx((5 + 10 + 15 + 20) / 4)
    assert figures.figure("length").reading == "scored rollouts only"
    analytic = figures.figure("length").analytic
    assert analytic is not None and analytic.method == "student-t"


def test_majority_at_k_votes_with_the_extracted_answers(tmp_path: Path) -> None:
    answers = {0: ["4", "4", "5"], 1: ["7", "8", "8"]}
    out = write_run(tmp_path / "r.jsonl", {0: [1.0, 1.0, 0.0], 1: [1.0, 0.0, 0.0]}, answers=answers)
    assert run_figures(out).figure("majority@3").value == 0.5


def test_the_figures_are_the_same_for_the_same_seed(tmp_path: Path) -> None:
    out = write_run(tmp_path / "r.jsonl", {t: [t / 10, 1.0 - t / 20] for t in range(10)})
    assert run_figures(out, seed=3).to_json() == run_figures(out, seed=3).to_json()
    assert run_figures(out, seed=3).to_json() != run_figures(out, seed=4).to_json()


def test_an_unknown_figure_names_the_known_ones(tmp_path: Path) -> None:
    out = write_run(tmp_path / "r.jsonl", {0: [1.0]})
    with pytest.raises(KeyError, match="mean reward, pass@1"):
        run_figures(out).figure("pass@9")
