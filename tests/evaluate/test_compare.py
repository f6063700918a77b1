"""Comparing two runs: pairing by task and prompt, differences, tests, flips and the gate."""

from __future__ import annotations

from pathlib import Path

import pytest

from palaestra.errors import ConfigError
from palaestra.evaluate import compare_runs
from palaestra.evaluate.compare import FAILURES, TASKS
from tests.evaluate.synthetic import write_run


def test_tasks_pair_by_index_and_prompt_and_the_rest_is_reported(tmp_path: Path) -> None:
    a = write_run(tmp_path / "a.jsonl", {0: [1.0], 1: [1.0], 2: [0.0], 3: [1.0]})
    b = write_run(tmp_path / "b.jsonl", {0: [1.0], 1: [0.0], 2: [1.0], 4: [1.0]})
    other = tmp_path / "other.jsonl"
    write_run(other, {3: [0.0]}, text="another prompt")
    comparison = compare_runs(a, b)
    assert comparison.paired == [0, 1, 2]
    assert (comparison.only_in_a, comparison.only_in_b) == ([3], [4])
    assert compare_runs(a, other).mismatched == [3]
    assert [f.task for f in comparison.to_fail] == [1]
    assert [f.task for f in comparison.to_pass] == [2]


def test_the_difference_is_over_paired_tasks_with_a_paired_interval(tmp_path: Path) -> None:
    a = write_run(tmp_path / "a.jsonl", {t: [0.2 + 0.01 * t] for t in range(40)})
    b = write_run(
        tmp_path / "b.jsonl", {t: [0.3 + 0.01 * t + (0.02 if t % 2 else -0.02)] for t in range(40)}
    )
    difference = compare_runs(a, b).difference("mean reward")
    assert difference.difference == pytest.approx(0.1)
    assert difference.tasks == 40
    # paired: the task effects cancel; unpaired, their spread (0.4) would swamp 0.1
    assert difference.interval is not None
    assert 0.09 < difference.interval.low < 0.1 < difference.interval.high < 0.11
    assert difference.test is not None and difference.test.method == "permutation"
    assert difference.test.p_value < 0.001


def test_pass_pass_with_one_rollout_is_mcnemar_and_with_repeats_a_sign_test(tmp_path: Path) -> None:
    a = write_run(tmp_path / "a.jsonl", {t: [1.0 if t < 6 else 0.0] for t in range(12)})
    b = write_run(tmp_path / "b.jsonl", {t: [1.0 if t < 2 else 0.0] for t in range(12)})
    test = compare_runs(a, b).difference("pass@1").test
    assert test is not None and (test.method, test.worse, test.better) == ("mcnemar-exact", 4, 0)
    assert test.p_value == pytest.approx(2 / 16)
    a2 = write_run(tmp_path / "a2.jsonl", {t: [1.0, 0.0] for t in range(5)})
    b2 = write_run(tmp_path / "b2.jsonl", {t: [1.0, 1.0] for t in range(5)})
    test = compare_runs(a2, b2).difference("pass@1").test
    assert test is not None and test.method == "sign-test-exact"


def test_the_gate_passes_only_when_the_interval_rules_out_a_drop_beyond_the_margin(
    tmp_path: Path,
) -> None:
    a = write_run(tmp_path / "a.jsonl", {t: [0.5 + 0.01 * (t % 7)] for t in range(50)})
    worse = write_run(
        tmp_path / "b.jsonl", {t: [0.45 + 0.01 * (t % 7) + 0.01 * (t % 3)] for t in range(50)}
    )
    same = compare_runs(a, a, fail_if_worse=0.0).gate
    assert same is not None and same.passed and same.bound == 0.0
    dropped = compare_runs(a, worse, fail_if_worse=0.02).gate
    assert dropped is not None and not dropped.passed and dropped.bound is not None
    assert dropped.bound < -0.02 and "mean reward" in dropped.reason
    tolerated = compare_runs(a, worse, fail_if_worse=0.1).gate
    assert tolerated is not None and tolerated.passed


def test_a_gate_without_an_interval_fails(tmp_path: Path) -> None:
    a = write_run(tmp_path / "a.jsonl", {0: [1.0]})
    gate = compare_runs(a, a, fail_if_worse=0.5).gate
    assert gate is not None and not gate.passed and gate.bound is None


def test_gating_on_a_figure_that_is_not_compared_is_a_config_error(tmp_path: Path) -> None:
    a = write_run(tmp_path / "a.jsonl", {0: [1.0], 1: [0.0]})
    with pytest.raises(ConfigError, match="cannot gate on 'pass@5'"):
        compare_runs(a, a, fail_if_worse=0.1, gate_on="pass@5")


def test_failures_as_zero_changes_the_reward_difference(tmp_path: Path) -> None:
    a = write_run(tmp_path / "a.jsonl", {t: [1.0, 1.0] for t in range(4)})
    b = write_run(tmp_path / "b.jsonl", {t: [1.0, "timeout"] for t in range(4)})
    assert compare_runs(a, b).difference("mean reward").difference == 0.0
    read_as_zero = compare_runs(a, b, failures_as_zero=True).difference("mean reward")
    assert read_as_zero.difference == -0.5 and read_as_zero.reading == "failures as 0"


def test_the_gate_fails_a_candidate_that_failed_more_of_its_rollouts(tmp_path: Path) -> None:
    # rewards of 0.5: the scored rollouts agree, so only the failures tell the runs apart
    a = write_run(tmp_path / "a.jsonl", {t: [0.5] * 10 for t in range(100)})
    b = write_run(tmp_path / "b.jsonl", {t: [0.5] * 5 + ["model_error"] * 5 for t in range(100)})
    gate = compare_runs(a, b, fail_if_worse=0.02).gate
    assert gate is not None and not gate.passed
    assert [(check.name, check.passed) for check in gate.checks] == [
        ("mean reward", True),
        (FAILURES, False),
        (TASKS, True),
    ]
    assert gate.reason == (
        "failures: candidate failed 500 of 1000 rollouts (50.0%), baseline 0 of 1000 (0.0%): "
        "beyond the margin 0.02"
    )
    allowed = compare_runs(a, b, fail_if_worse=0.02, allow_more_failures=True).gate
    assert allowed is not None and allowed.passed and allowed.checks[1].allowed
    assert "but more failures are allowed" in allowed.checks[1].reason


def test_failures_within_the_margin_pass_the_gate(tmp_path: Path) -> None:
    a = write_run(tmp_path / "a.jsonl", {t: [0.5, 0.5] for t in range(50)})
    b = write_run(tmp_path / "b.jsonl", {t: [0.5, "timeout" if t < 2 else 0.5] for t in range(50)})
    gate = compare_runs(a, b, fail_if_worse=0.02).gate  # 2% failed, against 0%
    assert gate is not None and gate.passed
    assert "failures: candidate failed 2 of 100 rollouts (2.0%)" in gate.reason


def test_the_gate_fails_a_candidate_that_lacks_the_baselines_tasks(tmp_path: Path) -> None:
    a = write_run(tmp_path / "a.jsonl", {t: [0.5] for t in range(100)})
    half = write_run(tmp_path / "b.jsonl", {t: [0.5] for t in range(50)})
    gate = compare_runs(a, half, fail_if_worse=0.02).gate
    assert gate is not None and not gate.passed
    assert gate.reason == (
        "tasks: candidate has 50 of the baseline's 100 tasks (50.0%), 50 missing: "
        "beyond the margin 0.02"
    )
    # another prompt at an index is not the baseline's task either
    other = write_run(tmp_path / "other.jsonl", {t: [0.5] for t in range(100)}, text="other")
    mismatched = compare_runs(a, other, fail_if_worse=0.02).gate
    assert mismatched is not None and not mismatched.checks[2].passed
    allowed = compare_runs(a, half, fail_if_worse=0.02, allow_fewer_tasks=True).gate
    assert allowed is not None and allowed.passed and allowed.checks[2].allowed
    more = compare_runs(half, a, fail_if_worse=0.0).gate  # more tasks than the baseline: fine
    assert more is not None and more.passed
