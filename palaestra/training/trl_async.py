"""palaestra's rollouts for TRL's asynchronous GRPO (``trl.experimental.async_grpo``, trl 1.16).

TRL's ``AsyncGRPOTrainer`` trains while rollouts are generated: a rollout worker fills a queue
with scored samples, the trainer drains it, drops samples more than ``max_staleness`` policy
versions old, and after each weight sync tells the worker the new version. It takes a custom
worker (``rollout_worker=``, its ``RolloutWorkerProtocol``). ``AsyncGrpoRolloutWorker`` is one
over a palaestra ``RolloutSampler``: the samples are whole multi-turn palaestra rollouts, their
tokens exactly as the policy sampled them::

    from trl.experimental.async_grpo import AsyncGRPOConfig, AsyncGRPOTrainer
    from palaestra import run_spec
    from palaestra.training import RolloutSampler
    from palaestra.training.trl_async import AsyncGrpoRolloutWorker

    # the policy: the vLLM server TRL pushes the weights into (vllm_server_base_url)
    run = run_spec(env="weather", model="http://localhost:8000/v1")
    sampler = RolloutSampler(run, group_size=8)
    worker = AsyncGrpoRolloutWorker(sampler)
    trainer = AsyncGRPOTrainer(
        model="<the model vLLM serves>", args=AsyncGRPOConfig(num_generations=8, ...),
        train_dataset=worker.dataset(), rollout_worker=worker,
    )
    trainer.train()

What TRL reads from each sample (``RolloutSample``): ``input_ids`` (the whole rollout: the last
model call's prompt and generation), ``completion_mask`` over the same positions (1 where the
policy generated the token: palaestra's loss mask, so tool outputs, a simulated user's turns
and template tokens are context), ``old_log_probs`` (the sampled log-probs, 0.0 elsewhere),
one ``advantage`` per rollout (its reward against its group's: ``(r - mean) / (std + 1e-8)``
over the group's scored rollouts, as TRL's own worker computes it), ``group_id`` and
``model_version``: the oldest policy version that served one of its model calls (palaestra
records them, ``Rollout.policy_versions``; the worker sets the sampler's ``policy_version``
to TRL's on every weight sync), so TRL's staleness bound sees the rollout's true age.

A rollout whose model calls form a tree (a harness that compacted its history, retried, ran a
sub-agent: ``palaestra.training.tree``) is one sample per leaf, every sampled token in exactly
one of them. They share the rollout's ``group_id`` (TRL counts a group once however many rows
it forks into) and its ``advantage``, computed over the group's rollouts with one reward each:
a rollout that branched does not weigh more in its group's baseline, and its tokens, each
trained once, weigh what a line's would. Each sample's metrics carry ``palaestra/branches``
and, when versions were recorded, ``palaestra/policy_span`` (policy updates the rollout
straddled), which TRL averages into its logs beside its own ``sample/staleness_*``.

A failed rollout is never a sample with reward 0: it is left out and counted
(``palaestra/failed_total`` in TRL's logs); so is a rollout with nothing to train on (every
token masked: a masked failure, a stale one). With the sampler's ``on_failure="raise"`` the
first failure stops training: ``check_health`` raises it in the trainer.

The worker runs the sampler on an event loop of its own in a daemon thread, batch after batch
(``groups_per_batch`` tasks each, default every task once) until ``stop``. The queue is
bounded (``queue_maxsize``): a trainer that falls behind holds the worker back.

This module imports trl only when the worker starts (its ``RolloutSample``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import importlib
import math
import queue
import threading
import time
from collections.abc import Sequence
from typing import Any

from palaestra._util.loop import LoopThread
from palaestra.errors import ConfigError
from palaestra.training.openenv_episode import prompt_messages
from palaestra.training.rollouts import Group, Rollout
from palaestra.training.stream import RolloutSampler
from palaestra.types import JsonDict, output_text

__all__ = ["AsyncGrpoRolloutWorker", "group_advantages"]

HEARTBEAT_S = 1.0
"""How often the worker's loop says it is alive (``check_health``)."""


def group_advantages(group: Group) -> dict[int, float]:
    """Each scored rollout's advantage (by ``sample``): its reward against the group's scored
    rewards, ``(r - mean) / (std + 1e-8)``, as TRL's asynchronous worker computes it. One
    reward per rollout: the leaves of a rollout that branched share its advantage."""
    scored = group.sample_rewards
    if not scored:
        return {}
    mean = sum(scored.values()) / len(scored)
    std = _std(list(scored.values()))
    return {sample: (value - mean) / (std + 1e-8) for sample, value in scored.items()}


class AsyncGrpoRolloutWorker:
    """TRL's ``RolloutWorkerProtocol`` over a palaestra ``RolloutSampler`` (see the module).

    ``sampler``: not opened yet; the worker opens it on its own loop and closes it on ``stop``.
    ``groups_per_batch``: tasks per batch (None: every task the task sampler picks, once).
    ``queue_maxsize``: samples waiting for the trainer at most.
    """

    def __init__(
        self,
        sampler: RolloutSampler,
        *,
        groups_per_batch: int | Sequence[int] | None = None,
        queue_maxsize: int = 1024,
    ) -> None:
        if queue_maxsize < 1:
            raise ConfigError(f"queue_maxsize must be at least 1, not {queue_maxsize}")
        self.sampler = sampler
        self.groups_per_batch = groups_per_batch
        self.rollout_buffer: queue.Queue[Any] = queue.Queue(maxsize=queue_maxsize)
        self.metrics_queue: queue.Queue[dict[str, Any]] = queue.Queue(maxsize=4096)
        self.model_version = 0
        self._stop = threading.Event()
        self._loop: LoopThread | None = None
        self._error: BaseException | None = None
        self._heartbeat = time.monotonic()
        self._sample_type: Any = None

    def dataset(self) -> Any:
        """A ``datasets.Dataset`` of the tasks' prompts, one row per task (``prompt``): what
        ``AsyncGRPOTrainer`` wants as ``train_dataset``. The worker ignores its rows (the
        sampler picks the tasks); TRL counts epochs by its length."""
        datasets = importlib.import_module("datasets")  # installed with trl, never by palaestra
        prompts = [prompt_messages(task) for task in self.sampler.tasks]
        return datasets.Dataset.from_dict({"prompt": prompts})

    # --- RolloutWorkerProtocol -----------------------------------------------------------

    def start(self) -> None:
        """Start producing samples in a daemon thread (TRL calls it on train begin)."""
        if self._loop is not None:
            return
        worker = importlib.import_module("trl.experimental.async_grpo.async_rollout_worker")
        self._sample_type = worker.RolloutSample
        self._heartbeat = time.monotonic()
        self._loop = LoopThread("palaestra-async-grpo")
        self._loop.submit(self._produce()).add_done_callback(self._ended)

    def stop(self) -> None:
        """Stop the rollouts in flight, close the sampler and join the thread."""
        self._stop.set()
        if self._loop is not None:
            self._loop.stop(timeout=30)  # the rollouts in flight are cancelled, then unwind
            self._loop = None

    def update_model_version(self, model_version: int) -> None:
        """TRL synced its weights: model calls from now on are served by ``model_version``."""
        self.model_version = model_version
        self.sampler.policy_version = model_version

    def check_health(self, stale_after_s: float) -> None:
        """Raise what stopped the worker, or if its loop has not ticked for ``stale_after_s``."""
        if self._error is not None:
            raise RuntimeError("palaestra's rollout worker failed") from self._error
        age = time.monotonic() - self._heartbeat
        if self._loop is not None and age > stale_after_s:
            raise RuntimeError(f"palaestra's rollout worker is hung: no heartbeat for {age:.0f}s")

    # --- the worker's thread -------------------------------------------------------------

    def _ended(self, done: concurrent.futures.Future[None]) -> None:
        """Keep what stopped the worker for ``check_health`` (the trainer raises it)."""
        if not done.cancelled() and done.exception() is not None:
            self._error = done.exception()

    async def _produce(self) -> None:
        beat = asyncio.create_task(self._beat())
        try:
            async with self.sampler:
                self.sampler.policy_version = self.model_version
                while not self._stop.is_set():
                    version = self.model_version
                    batch = self.sampler.stream(self.groups_per_batch)
                    async with contextlib.aclosing(batch) as groups:  # a break stops it at once
                        async for group in groups:
                            await self._hand_over(group, version)
                            if self._stop.is_set():
                                break
        finally:
            beat.cancel()

    async def _beat(self) -> None:
        while True:
            self._heartbeat = time.monotonic()
            await asyncio.sleep(HEARTBEAT_S)

    async def _hand_over(self, group: Group, version: int) -> None:
        samples = self.samples_of(group, version)
        failed = len(group.failures)
        untrained = sum(1 for r in group.rollouts if r.failure is None and not any(r.loss_mask))
        self._metric(
            {"palaestra/failed_total": float(failed), "palaestra/untrained_total": float(untrained)}
        )
        for sample in samples:
            while not self._stop.is_set():
                try:
                    await asyncio.to_thread(self.rollout_buffer.put, sample, True, 1.0)
                    break
                except queue.Full:
                    continue

    def samples_of(self, group: Group, version: int) -> list[Any]:
        """The group's trainable rollouts as TRL ``RolloutSample``s (``version``: the policy
        version when the batch started, for rollouts that recorded none)."""
        advantages = group_advantages(group)
        std = _std(list(group.sample_rewards.values()))
        prompt = prompt_messages(group.task)
        samples = []
        for rollout in group.rollouts:
            if rollout.sample not in advantages or not any(rollout.loss_mask):
                continue
            samples.append(self._sample(rollout, prompt, advantages[rollout.sample], std, version))
        return samples

    def _sample(
        self, rollout: Rollout, prompt: list[JsonDict], advantage: float, std: float, version: int
    ) -> Any:
        import numpy as np

        versions = [v for v in rollout.policy_versions or [] if isinstance(v, int)]
        response = rollout.response or {}
        metrics = {"reward": _reward(rollout), "reward_std": std}
        metrics["palaestra/branches"] = float(rollout.leaves)
        if rollout.version_span is not None:
            metrics["palaestra/policy_span"] = float(rollout.version_span)
        return self._sample_type(
            prompt=prompt,
            completion=[{"role": "assistant", "content": output_text(response)}],
            input_ids=np.asarray(rollout.token_ids, dtype=np.int64),
            completion_mask=np.asarray(rollout.loss_mask, dtype=np.int64),
            old_log_probs=np.asarray(rollout.log_probs, dtype=np.float32),
            advantage=float(advantage),
            model_version=min(versions) if versions else version,
            group_id=rollout.group_id,
            metrics=metrics,
            enqueued_at=time.time(),
        )

    def _metric(self, values: dict[str, Any]) -> None:
        with contextlib.suppress(queue.Full):  # metrics are best effort, samples are not
            self.metrics_queue.put_nowait(values)


def _reward(rollout: Rollout) -> float:
    """A scored rollout's reward (only those become samples: never a default)."""
    if rollout.reward is None:
        raise ValueError(f"rollout {rollout.sample} of group {rollout.group_id} has no reward")
    return float(rollout.reward)


def _std(values: list[float]) -> float:
    if not values:
        return float("nan")
    mean = sum(values) / len(values)
    return math.sqrt(sum((value - mean) ** 2 for value in values) / len(values))
