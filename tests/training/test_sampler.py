"""The task sampler: saturated tasks (always or never solved over their last k rollouts) are
skipped, revisited now and then, and brought back when they change; deterministic by seed."""

from __future__ import annotations

import pytest

from palaestra.errors import ConfigError
from palaestra.training import TaskSampler


def test_every_task_is_run_until_it_has_k_scored_rollouts() -> None:
    sampler = TaskSampler(3, attempts=4)
    sampler.record(0, [1.0, 1.0, 1.0])  # three passes: not judged yet
    assert sorted(sampler.select()) == [0, 1, 2]
    assert sampler.status(0) == "active" and sampler.pass_rate(0) == 1.0
    assert sampler.pass_rate(1) is None


def test_always_and_never_solved_tasks_are_skipped_and_the_rest_run() -> None:
    sampler = TaskSampler(4, attempts=4, revisit_every=0)
    sampler.record(0, [1.0] * 4)
    sampler.record(1, [0.0] * 4)
    sampler.record(2, [1.0, 0.0, 1.0, 0.0])
    assert (sampler.status(0), sampler.status(1), sampler.status(2)) == (
        "solved",
        "unsolved",
        "active",
    )
    for _ in range(5):
        assert sorted(sampler.select()) == [2, 3]
    assert sampler.skips == {"solved": 5, "unsolved": 5}
    assert sampler.summary() == {"active": 2, "solved": 1, "unsolved": 1}


def test_a_skipped_task_is_revisited_and_comes_back_when_it_becomes_solvable() -> None:
    sampler = TaskSampler(2, attempts=4, revisit_every=3)
    sampler.record(0, [0.0] * 4)  # never solved
    batches = [sorted(sampler.select()) for _ in range(4)]
    assert batches == [[1], [1], [1], [0, 1]]  # skipped three times, then run once
    assert sampler.revisits == 1
    sampler.record(0, [0.0, 1.0])  # the policy now solves it sometimes
    assert sampler.status(0) == "active"
    assert sorted(sampler.select()) == [0, 1]
    assert sampler.attempts_of(0) == (6, 1)


def test_a_revisit_that_confirms_saturation_skips_the_task_again() -> None:
    sampler = TaskSampler(1, attempts=2, revisit_every=1)
    sampler.record(0, [1.0, 1.0])
    assert sampler.select() == []
    assert sampler.select() == [0]  # due
    sampler.record(0, [1.0, 1.0])
    assert sampler.select() == []


def test_thresholds_are_configurable() -> None:
    sampler = TaskSampler(2, attempts=4, pass_reward=0.5, solved_rate=0.75, revisit_every=0)
    sampler.record(0, [0.6, 0.9, 0.5, 0.1])  # three of four pass at 0.5: 0.75 is "solved"
    sampler.record(1, [0.4, 0.4, 0.4, 0.4])  # none pass
    assert sampler.select() == []
    never_skip_solved = TaskSampler(1, attempts=2, solved_rate=1.1)
    never_skip_solved.record(0, [1.0, 1.0])
    assert never_skip_solved.select() == [0]
    no_skipping = TaskSampler(1, attempts=2, skip_saturated=False)
    no_skipping.record(0, [0.0, 0.0])
    assert no_skipping.select() == [0]


def test_the_window_is_the_last_k_rollouts() -> None:
    sampler = TaskSampler(1, attempts=3, revisit_every=0)
    sampler.record(0, [0.0, 0.0, 0.0, 1.0, 1.0, 1.0])
    assert sampler.status(0) == "solved"
    assert sampler.attempts_of(0) == (6, 3)


def test_selection_is_deterministic_for_a_seed_and_differs_across_seeds() -> None:
    def run(seed: int) -> list[list[int]]:
        sampler = TaskSampler(20, seed=seed, attempts=2)
        picked = []
        for step in range(6):
            batch = sampler.select(7)
            picked.append(batch)
            for index in batch:
                sampler.record(index, [1.0 if (index + step) % 3 == 0 else 0.0] * 2)
        return picked

    assert run(3) == run(3)
    assert run(3) != run(4)


def test_a_count_walks_on_through_the_passes_without_repeating_a_task_in_a_call() -> None:
    sampler = TaskSampler(5, seed=1)
    seen = [sampler.select(3) for _ in range(5)]
    assert all(len(batch) == len(set(batch)) == 3 for batch in seen)
    flat = [index for batch in seen for index in batch]
    # Each pass visits every task once: the first 15 picks are three whole passes.
    assert all(sorted(flat[start : start + 5]) == list(range(5)) for start in (0, 5, 10))
    assert sorted(TaskSampler(5, shuffle=False).select()) == TaskSampler(5, shuffle=False).select()


def test_bad_settings_are_one_line_config_errors() -> None:
    with pytest.raises(ConfigError, match="at least one task"):
        TaskSampler(0)
    with pytest.raises(ConfigError, match="attempts must be at least 1"):
        TaskSampler(3, attempts=0)
    with pytest.raises(ConfigError, match="count must be at least 1"):
        TaskSampler(3).select(0)
