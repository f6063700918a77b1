"""Training: palaestra environments and rollouts as RL trainers consume them.

``RolloutSampler`` (async) and ``SyncRolloutSampler`` stream GRPO groups of token-exact
rollouts; ``TaskSampler`` skips saturated tasks; ``TrlRolloutFunc`` is TRL's ``rollout_func``;
``AsyncGrpoRolloutWorker`` is the rollout worker of TRL's asynchronous GRPO;
``local_policy_model`` is the embedded model as a trainable ``transformers`` model
(``local_policy_tokenizer`` its tokenizer alone).
Names load on first use: ``import palaestra.training`` imports no trainer, torch or model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from palaestra._util.lazy import lazy_exports

if TYPE_CHECKING:
    from palaestra.training.local_policy import local_policy_model, local_policy_tokenizer
    from palaestra.training.rollouts import Group, OnFailure, Rollout, RolloutFailed, RolloutStats
    from palaestra.training.sampler import TaskSampler, TasksSaturated
    from palaestra.training.stream import RolloutSampler
    from palaestra.training.sync import SyncRolloutSampler
    from palaestra.training.trl_async import AsyncGrpoRolloutWorker
    from palaestra.training.trl_rollout import TrlRolloutFunc

_LAZY = {
    "AsyncGrpoRolloutWorker": "palaestra.training.trl_async",
    "Group": "palaestra.training.rollouts",
    "local_policy_model": "palaestra.training.local_policy",
    "local_policy_tokenizer": "palaestra.training.local_policy",
    "OnFailure": "palaestra.training.rollouts",
    "Rollout": "palaestra.training.rollouts",
    "RolloutFailed": "palaestra.training.rollouts",
    "RolloutStats": "palaestra.training.rollouts",
    "TaskSampler": "palaestra.training.sampler",
    "TasksSaturated": "palaestra.training.sampler",
    "RolloutSampler": "palaestra.training.stream",
    "SyncRolloutSampler": "palaestra.training.sync",
    "TrlRolloutFunc": "palaestra.training.trl_rollout",
}


__getattr__ = lazy_exports("palaestra.training", _LAZY)


__all__ = [
    "AsyncGrpoRolloutWorker",
    "Group",
    "OnFailure",
    "Rollout",
    "RolloutFailed",
    "RolloutSampler",
    "RolloutStats",
    "SyncRolloutSampler",
    "TaskSampler",
    "TasksSaturated",
    "TrlRolloutFunc",
    "local_policy_model",
    "local_policy_tokenizer",
]
