"""The intervals cover the truth as often as they claim, on synthetic data of known truth.

Each coverage test draws 400 data sets from a distribution whose mean is known and counts how
often the 95% interval holds it: 92% to 98% (400 draws put the count within about 2.2 points
of its expectation 19 times in 20; the seeds are fixed, so the tests are deterministic).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from palaestra.evaluate import (
    Rollout,
    Run,
    Task,
    bootstrap_mean,
    newcombe_paired,
    permutation_test,
    run_figures,
    sign_test,
    student_t,
    wilson,
)
from palaestra.evaluate.stats import analytic_mean, bootstrap_means

SIMULATIONS = 400


def covered(intervals: list[tuple[float, float]], truth: float) -> float:
    return sum(low <= truth <= high for low, high in intervals) / len(intervals)


def test_the_bootstrap_and_t_intervals_of_a_skewed_mean_cover_it_95_times_in_100() -> None:
    rng = np.random.default_rng(11)
    truth = 2 / 7  # the mean of Beta(2, 5): skewed continuous per-task rewards
    boot, t = [], []
    for number, values in enumerate(rng.beta(2, 5, size=(SIMULATIONS, 150))):
        b, s = bootstrap_mean(values, seed=number), student_t(values)
        assert b is not None and s is not None
        boot.append((b.low, b.high))
        t.append((s.low, s.high))
    assert 0.92 <= covered(boot, truth) <= 0.98
    assert 0.92 <= covered(t, truth) <= 0.98


def test_wilson_covers_a_pass_rate_near_1_where_the_bootstrap_falls_short() -> None:
    rng = np.random.default_rng(5)
    truth = 0.95
    boot, score = [], []
    for number, values in enumerate((rng.random((SIMULATIONS, 40)) < truth).astype(float)):
        b, w = bootstrap_mean(values, seed=number), wilson(int(values.sum()), values.size)
        assert w is not None
        boot.append((b.low, b.high) if b else (np.nan, np.nan))
        score.append((w.low, w.high))
    assert 0.92 <= covered(score, truth) <= 0.98
    assert covered(boot, truth) < 0.92  # why a 0/1 figure shows Wilson's interval


def simulated_run(rng: np.random.Generator, tasks: int, repeats: int) -> Run:
    """Per task a pass chance from Beta(2, 2); its rollouts pass (reward 1) with that chance."""
    run = Run(output=None, failures_file=None)  # type: ignore[arg-type]
    chances = rng.beta(2, 2, size=tasks)
    passes = rng.random((tasks, repeats)) < chances[:, None]
    for index in range(tasks):
        rollouts = [
            Rollout(task=index, index=r, reward=float(passes[index, r]), metrics={})
            for r in range(repeats)
        ]
        run.tasks[index] = Task(index, rollouts=rollouts)
    return run


def test_every_figure_of_a_run_with_repeats_covers_its_truth() -> None:
    """Rollouts of a task share its pass chance: the intervals resample whole tasks."""
    rng = np.random.default_rng(3)
    # Beta(2, 2): E[p] = 1/2; E[p^4] = E[(1-p)^4] = 1/7, so pass@4 = 6/7 and pass^4 = 1/7.
    truths = {"mean reward": 0.5, "pass@1": 0.5, "pass@4": 6 / 7, "pass^4": 1 / 7}
    shown: dict[str, list[tuple[float, float]]] = {name: [] for name in truths}
    for number in range(SIMULATIONS):
        figures = run_figures(simulated_run(rng, 60, 4), metrics=False, seed=number)
        for name in truths:
            interval = figures.figure(name).interval
            assert interval is not None
            shown[name].append((interval.low, interval.high))
    for name, truth in truths.items():
        assert 0.92 <= covered(shown[name], truth) <= 0.98, name


def test_resampling_rollouts_instead_of_tasks_would_be_too_narrow() -> None:
    """The same runs, every rollout taken as independent: the interval misses far too often."""
    rng = np.random.default_rng(3)
    naive = []
    for number in range(SIMULATIONS):
        run = simulated_run(rng, 60, 4)
        rewards = [r.reward for r in run.rollouts()]
        interval = bootstrap_mean(rewards, seed=number)
        assert interval is not None
        naive.append((interval.low, interval.high))
    assert covered(naive, 0.5) < 0.91


def test_the_bootstrap_is_the_same_for_the_same_seed_and_moves_with_another() -> None:
    values = np.random.default_rng(0).random(50)
    one, again, other = (bootstrap_mean(values, seed=s) for s in (4, 4, 5))
    assert one == again
    assert one != other
    assert one is not None and one.method == "bootstrap" and "seed 4" in one.detail


def test_drawing_level_counts_matches_resampling_tasks_one_by_one() -> None:
    """Few distinct values take the multinomial shortcut; its quantiles match the long way."""
    values = np.repeat([0.0, 0.25, 0.5, 1.0], [30, 20, 25, 25])
    short = bootstrap_means(values, resamples=20000, seed=1)
    rng = np.random.default_rng(2)
    long = values[rng.integers(0, values.size, size=(20000, values.size))].mean(axis=1)
    assert short is not None
    for q in (0.025, 0.5, 0.975):
        assert np.quantile(short, q) == pytest.approx(np.quantile(long, q), abs=0.006)


def test_one_task_gives_no_interval_rather_than_a_false_one() -> None:
    assert bootstrap_mean([0.5]) is None
    assert student_t([0.5]) is None
    assert wilson(1, 1) is None


def test_mcnemar_is_the_exact_binomial_test_of_the_discordant_tasks() -> None:
    # 8 tasks flipped to pass, 2 to fail, 5 unchanged: p = 2 * P(X <= 2), X ~ Bin(10, 1/2)
    diffs = [1.0] * 8 + [-1.0] * 2 + [0.0] * 5
    result = sign_test(diffs, mcnemar=True)
    assert result.p_value == pytest.approx(2 * (1 + 10 + 45) / 1024)
    assert (result.better, result.worse, result.ties, result.method) == (8, 2, 5, "mcnemar-exact")


def test_the_permutation_test_equals_counting_every_sign_pattern() -> None:
    diffs = np.array([0.5, 0.25, -0.1, 0.75, 0.0, 0.3, -0.2, 0.6])
    observed = abs(diffs.mean())
    patterns = list(itertools.product([1, -1], repeat=diffs.size))
    extreme = sum(abs((diffs * np.array(p)).mean()) >= observed - 1e-12 for p in patterns)
    result = permutation_test(diffs)
    assert result.method == "permutation-exact"
    assert result.p_value == pytest.approx(extreme / len(patterns))


def test_random_sign_patterns_estimate_the_exact_permutation_p_value() -> None:
    diffs = np.random.default_rng(4).normal(0.1, 0.5, size=16)  # 65,536 patterns
    exact = permutation_test(diffs, resamples=1 << 16)
    sampled = permutation_test(diffs, resamples=9999, seed=1)
    assert exact.method == "permutation-exact" and sampled.method == "permutation"
    assert sampled.p_value == pytest.approx(exact.p_value, abs=0.015)


def paired_outcomes(rng: np.random.Generator, tasks: int) -> tuple[np.ndarray, np.ndarray]:
    """Two runs' pass/fail on the same tasks: A passes 70%, B 78%, correlated by the task."""
    hardness = rng.random(tasks)
    again = np.where(rng.random(tasks) < 0.7, hardness, rng.random(tasks))
    return (hardness < 0.7).astype(float), (again < 0.78).astype(float)


def test_newcombe_and_the_paired_bootstrap_cover_a_difference_of_pass_rates() -> None:
    rng = np.random.default_rng(8)
    truth = 0.78 - 0.7
    score, boot = [], []
    for number in range(SIMULATIONS):
        a, b = paired_outcomes(rng, 80)
        n, p = newcombe_paired(a, b), bootstrap_mean(b - a, seed=number)
        assert n is not None and p is not None
        score.append((n.low, n.high))
        boot.append((p.low, p.high))
    assert 0.92 <= covered(score, truth) <= 0.98
    assert 0.92 <= covered(boot, truth) <= 0.98


def test_newcombe_stays_open_when_no_task_changed() -> None:
    same = np.ones(5)
    interval = newcombe_paired(same, same)
    assert interval is not None and interval.method == "newcombe"
    assert interval.low == pytest.approx(-interval.high) and interval.low < -0.4
    flat = bootstrap_mean(same - same)
    assert flat is not None and (flat.low, flat.high) == (0.0, 0.0)  # what the bootstrap says


def test_the_interval_of_rewards_in_0_1_stays_in_0_1() -> None:
    """Per-task means near 0 (a t interval alone would reach below 0) and near 1."""
    low = analytic_mean([0.0, 0.0, 0.0, 0.5])
    high = analytic_mean([1.0, 1.0, 1.0, 0.5])
    assert low is not None and high is not None
    assert low.low == 0.0 and low.high > 0.125 and "kept within [0, 1]" in low.detail
    assert high.high == 1.0 and high.low < 0.875
    wide = analytic_mean([-1.0, 0.0, 0.5])  # rewards outside [0, 1]: taken as they are
    assert wide is not None and wide.low < -1.0
