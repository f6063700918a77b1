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


def rollout(sample: int, reward: float | None, *, failed: bool = False) -> Rollout:
    failure = Failure(FailureKind.VERIFIER_ERROR, "cannot be checked") if failed else None
    return Rollout(
        group_id=0, task_index=0, sample=sample, step=0, token_ids=[1, 2, 3],
        loss_mask=[0, 1, 1], log_probs=[0.0, -0.5, -0.25], prompt_length=1,
        reward=reward, failure=failure,
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
