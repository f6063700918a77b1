"""``SyncRolloutSampler``: the ``RolloutSampler`` for trainers that are plain synchronous loops.

::

    from palaestra import run_spec
    from palaestra.training import SyncRolloutSampler

    with SyncRolloutSampler(run_spec(env="weather", model="local"), group_size=4) as sampler:
        for step in range(100):
            groups = sampler.batch()
            ...

The sampler lives on a private event loop in one daemon thread for its whole life (its
environment client, model client and sessions belong to that loop); each call hands the
work to it and waits. So it works from any thread, also one whose own event loop is running
(a notebook, a trainer with async internals), and it never touches that loop.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator, Sequence
from types import TracebackType
from typing import Any

from palaestra._util.loop import LoopThread
from palaestra.observe.metrics_counts import StalenessCounts
from palaestra.training.rollouts import Group, RolloutStats
from palaestra.training.sampler import TaskSampler
from palaestra.training.stream import Policy, RolloutSampler
from palaestra.types import JsonDict

__all__ = ["SyncRolloutSampler"]


class SyncRolloutSampler:
    """A ``RolloutSampler`` (same arguments) driven by blocking calls; open once built.

    ``sampler`` is the async one underneath.
    """

    def __init__(self, *args: Any, **options: Any) -> None:
        self._start(RolloutSampler(*args, **options))

    @classmethod
    def wrap(cls, sampler: RolloutSampler) -> SyncRolloutSampler:
        """Drive an unopened ``RolloutSampler`` with blocking calls (it is opened here)."""
        made = cls.__new__(cls)
        made._start(sampler)
        return made

    def _start(self, sampler: RolloutSampler) -> None:
        self.sampler = sampler
        self._loop = LoopThread("palaestra-rollouts")
        try:
            self._loop.run(self.sampler.open())
        except BaseException:
            self._loop.stop()
            raise

    @property
    def stats(self) -> RolloutStats:
        return self.sampler.stats

    @property
    def staleness(self) -> StalenessCounts:
        """``RolloutSampler.staleness``: span and age of the rollouts handed over."""
        return self.sampler.staleness

    @property
    def policy_version(self) -> int | None:
        """``RolloutSampler.policy_version``: the version the engines serve now, as the
        trainer says (set it after each weight update)."""
        return self.sampler.policy_version

    @policy_version.setter
    def policy_version(self, version: int | None) -> None:
        self.sampler.policy_version = version

    @property
    def tasks(self) -> list[JsonDict]:
        return self.sampler.tasks

    @property
    def task_sampler(self) -> TaskSampler:
        return self.sampler.task_sampler

    def batch(
        self,
        tasks: int | Sequence[int] | None = None,
        *,
        group_size: int | Sequence[int] | None = None,
    ) -> list[Group]:
        """``RolloutSampler.batch``: every group of the next batch."""
        return self._loop.run(self.sampler.batch(tasks, group_size=group_size))

    def stream(
        self,
        tasks: int | Sequence[int] | None = None,
        *,
        group_size: int | Sequence[int] | None = None,
    ) -> Generator[Group, None, None]:
        """``RolloutSampler.stream``: each group as it completes. Leaving the loop early
        stops the batch's rollouts at once."""
        groups = self.sampler.stream(tasks, group_size=group_size)
        try:
            while True:
                try:
                    yield self._loop.run(_next(groups))
                except StopAsyncIteration:
                    return
        finally:
            self._loop.run(groups.aclose())

    def set_policy(self, policy: Policy) -> None:
        """``RolloutSampler.set_policy``: sample the next batches from ``policy``."""
        self._loop.run(self.sampler.set_policy(policy))

    def close(self) -> None:
        """Close the sampler and stop its loop."""
        try:
            self._loop.run(self.sampler.aclose())
        finally:
            self._loop.stop()

    def __enter__(self) -> SyncRolloutSampler:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


async def _next(groups: AsyncGenerator[Group, None]) -> Group:
    return await anext(groups)
