"""``AsyncGrpoRolloutWorker`` on its own: the advantages it gives, and a broken sampler
reaching TRL's health check (the trainer's only way to learn of it)."""

from __future__ import annotations

import importlib.util
import socket
import time

import pytest

from palaestra.training import RolloutSampler
from palaestra.training.rollouts import Group, Rollout
from palaestra.training.trl_async import AsyncGrpoRolloutWorker, group_advantages
from palaestra.types import Failure, FailureKind
from tests.training.test_rollouts_local import TASKS, Adder


def rollout(
    sample: int, reward: float | None, *, failed: bool = False, leaf: int = 0, leaves: int = 1
) -> Rollout:
    failure = Failure(FailureKind.VERIFIER_ERROR, "cannot be checked") if failed else None
    return Rollout(
        group_id=0, task_index=0, sample=sample, step=0, token_ids=[1, 2, 3],
        loss_mask=[0, 1, 1], log_probs=[0.0, -0.5, -0.25], prompt_length=1,
        reward=reward, failure=failure, leaf=leaf, leaves=leaves,
    )  # fmt: skip


def test_advantages_center_the_scored_rewards_and_a_failure_gets_none() -> None:
    group = Group(0, 0, 0, TASKS[0], 4)
    group.rollouts = [rollout(0, 1.0), rollout(1, 0.0), rollout(2, None, failed=True)]
    group.rollouts.append(rollout(3, 1.0))
    advantages = group_advantages(group)
    assert set(advantages) == {0, 1, 3}  # the failed rollout is not scored 0
    assert sum(advantages.values()) == pytest.approx(0.0, abs=1e-6)
    assert advantages[0] == advantages[3] > 0 > advantages[1]
    # one reward for the whole group: nothing to learn, every advantage 0
    group.rollouts = [rollout(0, 1.0), rollout(1, 1.0)]
    assert group_advantages(group) == {0: 0.0, 1: 0.0}


def test_a_branched_rollout_is_a_sample_per_leaf_sharing_its_advantage_counted_once() -> None:
    trl_worker = pytest.importorskip("trl.experimental.async_grpo.async_rollout_worker")
    group = Group(0, 0, 0, TASKS[0], 2)
    group.rollouts = [rollout(0, 1.0, leaf=0, leaves=2), rollout(0, 1.0, leaf=1, leaves=2)]
    group.rollouts.append(rollout(1, 0.0))
    # One reward per rollout in the baseline: the branched one does not weigh twice.
    assert group.sample_rewards == {0: 1.0, 1: 0.0} and group.mean_reward == 0.5
    worker = AsyncGrpoRolloutWorker(RolloutSampler(Adder(), tasks=TASKS, policy="http://x/v1"))
    worker._sample_type = trl_worker.RolloutSample  # what start() loads
    first, second, third = worker.samples_of(group, version=0)
    assert first.advantage == second.advantage == pytest.approx(1.0, abs=1e-6)
    assert third.advantage == pytest.approx(-1.0, abs=1e-6)
    assert first.group_id == second.group_id == third.group_id == 0
    assert first.metrics["reward_std"] == pytest.approx(0.5)
    assert (first.metrics["palaestra/branches"], third.metrics["palaestra/branches"]) == (2, 1)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_sampler_that_cannot_start_makes_the_trainers_health_check_raise_its_cause(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if importlib.util.find_spec("trl") is None:
        pytest.skip("trl not installed: run `bash scripts/install_training.sh`")
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    address = f"127.0.0.1:{closed_port()}"
    worker = AsyncGrpoRolloutWorker(
        RolloutSampler(Adder(), tasks=TASKS, policy=f"http://{address}/v1")
    )
    worker.start()
    try:
        deadline = time.monotonic() + 60
        with pytest.raises(RuntimeError, match="rollout worker failed") as raised:
            while time.monotonic() < deadline:  # what TRL does while it waits for a sample
                worker.check_health(stale_after_s=300)
                time.sleep(0.1)
        assert address in str(raised.value.__cause__)
        assert worker.rollout_buffer.empty()
    finally:
        worker.stop()
