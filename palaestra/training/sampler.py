"""A task sampler that learns which tasks are worth a rollout: saturated ones are skipped.

Over many batches on the same tasks most of the compute can go to tasks the policy always
solves or never solves: their GRPO groups have one reward for every sample, so zero advantage
and nothing to learn (NeMo Gym #1509 asks for exactly this skip). ``TaskSampler`` keeps, per
task, the outcome of its last ``attempts`` scored rollouts and leaves a task out of a batch
while those are all passes (pass rate at or above ``solved_rate``) or all misses (at or below
``unsolved_rate``). A skipped task is not gone: after it was skipped ``revisit_every`` times it
is run once more, and its new outcomes replace the old ones in its window, so a task the
policy has learned to solve (or forgotten) is noticed.

Deterministic: the order tasks are visited in is a permutation per pass drawn from ``seed``,
and everything else depends only on what was recorded. Failed rollouts are not attempts
(``record`` is given scored rewards only): a task that cannot be scored is never judged
"never solved".
"""

from __future__ import annotations

import random
from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from palaestra.errors import ConfigError, PalaestraError

__all__ = ["TaskSampler", "TaskStatus", "TasksSaturated"]

TaskStatus = Literal["active", "solved", "unsolved"]
"""``active`` (run it), or saturated: ``solved`` (always passes), ``unsolved`` (never does)."""


class TasksSaturated(PalaestraError):
    """A batch the task sampler chose has no task: every one is saturated, none due back.

    Raised by ``RolloutSampler.batch`` and ``stream`` instead of an empty batch, which a
    training loop would take as a step with nothing to learn from, again and again. ``solved``
    and ``unsolved`` count the tasks of each kind; a saturated task is due back after it was
    skipped ``revisit_every`` times (never with 0), so with revisits a later batch runs some.
    """

    def __init__(self, sampler: TaskSampler) -> None:
        counts = sampler.summary()
        self.tasks = sampler.num_tasks
        self.solved, self.unsolved = counts["solved"], counts["unsolved"]
        kinds = " and ".join(
            f"{count} {what}"
            for count, what in ((self.solved, "always solved"), (self.unsolved, "never solved"))
            if count
        )
        back = (
            f"each runs again once skipped revisit_every={sampler.revisit_every} times"
            if sampler.revisit_every
            else "none is ever revisited (revisit_every=0)"
        )
        super().__init__(
            f"no task to run: all {self.tasks} tasks are saturated ({kinds} over their last "
            f"{sampler.attempts} scored rollouts) and {back}; to run them, pass task_sampler="
            "{'skip_saturated': False} or widen solved_rate/unsolved_rate"
        )


@dataclass(slots=True)
class _Task:
    recent: deque[bool]
    """Pass or miss of the task's most recent scored rollouts (at most ``attempts``)."""
    attempts: int = 0
    passes: int = 0
    skipped: int = 0
    """Times the task was skipped since it last ran."""


@dataclass(slots=True)
class TaskSampler:
    """Which of ``num_tasks`` tasks the next batch runs, from their pass rates so far.

    - ``pass_reward``: a rollout passes when its reward is at least this.
    - ``attempts``: a task is judged on its last ``attempts`` scored rollouts (k); with fewer
      it is always run.
    - ``solved_rate`` / ``unsolved_rate``: a judged task whose pass rate is at or above the
      first is ``solved``, at or below the second ``unsolved``; both are skipped. Set
      ``solved_rate`` above 1 (or ``unsolved_rate`` below 0) to never skip that kind, or
      ``skip_saturated=False`` to skip nothing.
    - ``revisit_every``: a skipped task runs again after it was skipped this many times
      (``0``: never revisited).
    - ``seed`` and ``shuffle``: tasks are visited in a permutation drawn from ``seed`` for
      each pass over them (in index order with ``shuffle=False``).
    """

    num_tasks: int
    seed: int = 0
    attempts: int = 8
    pass_reward: float = 1.0
    solved_rate: float = 1.0
    unsolved_rate: float = 0.0
    revisit_every: int = 10
    shuffle: bool = True
    skip_saturated: bool = True
    _tasks: list[_Task] = field(init=False, repr=False)
    _order: list[int] = field(init=False, repr=False)
    _cursor: int = field(init=False, repr=False, default=0)
    _pass: int = field(init=False, repr=False, default=0)
    skips: Counter[str] = field(init=False, default_factory=Counter)
    """How many times tasks were skipped, by status (``solved``, ``unsolved``)."""
    revisits: int = field(init=False, default=0)
    """How many times a saturated task was run again."""

    def __post_init__(self) -> None:
        if self.num_tasks < 1:
            raise ConfigError(f"a task sampler needs at least one task, not {self.num_tasks}")
        if self.attempts < 1:
            raise ConfigError(f"attempts must be at least 1, not {self.attempts}")
        if self.revisit_every < 0:
            raise ConfigError(f"revisit_every must be 0 or more, not {self.revisit_every}")
        self._tasks = [_Task(deque(maxlen=self.attempts)) for _ in range(self.num_tasks)]
        self._order = self._permutation(0)

    def _permutation(self, number: int) -> list[int]:
        order = list(range(self.num_tasks))
        if self.shuffle:
            # One generator per pass, seeded from (seed, pass): a pass's order does not depend
            # on how many tasks earlier calls asked for.
            random.Random(self.seed * 1_000_003 + number).shuffle(order)
        return order

    def _next(self, taken: list[int]) -> int:
        if self._cursor == len(self._order):
            self._pass += 1
            order = self._permutation(self._pass)
            # Tasks this call already took go last in the new pass: a call never takes a task
            # twice (it visits at most num_tasks), and each pass still visits every task once.
            held = set(taken)
            self._order = [i for i in order if i not in held] + [i for i in order if i in held]
            self._cursor = 0
        index = self._order[self._cursor]
        self._cursor += 1
        return index

    def record(self, task_index: int, rewards: Iterable[float]) -> None:
        """Add the rewards of ``task_index``'s scored rollouts (never a failed one's)."""
        task = self._tasks[task_index]
        for reward in rewards:
            passed = reward >= self.pass_reward
            task.recent.append(passed)
            task.attempts += 1
            task.passes += passed

    def pass_rate(self, task_index: int) -> float | None:
        """The pass rate over the task's window of recent rollouts; None before any."""
        recent = self._tasks[task_index].recent
        return sum(recent) / len(recent) if recent else None

    def status(self, task_index: int) -> TaskStatus:
        """``active`` unless the task's full window says it is saturated."""
        recent = self._tasks[task_index].recent
        if not self.skip_saturated or len(recent) < self.attempts:
            return "active"
        rate = sum(recent) / len(recent)
        if rate >= self.solved_rate:
            return "solved"
        if rate <= self.unsolved_rate:
            return "unsolved"
        return "active"

    def select(self, count: int | None = None) -> list[int]:
        """The task indices of the next batch, in the order to run them.

        Visits tasks in the current pass's order from where the last call stopped, taking
        active tasks and saturated ones due for a revisit, until ``count`` are taken or every
        task was visited once (``count=None``: one visit to every task). So a call may return
        fewer than ``count`` (none when every task is saturated and none is due yet), and
        never the same task twice.
        """
        if count is not None and count < 1:
            raise ConfigError(f"count must be at least 1, not {count}")
        chosen: list[int] = []
        for _ in range(self.num_tasks):
            if count is not None and len(chosen) >= count:
                break
            index = self._next(chosen)
            task = self._tasks[index]
            status = self.status(index)
            if status != "active":
                if not self.revisit_every or task.skipped < self.revisit_every:
                    task.skipped += 1
                    self.skips[status] += 1
                    continue
                self.revisits += 1
            task.skipped = 0
            chosen.append(index)
        return chosen

    def summary(self) -> Counter[str]:
        """How many tasks are ``active``, ``solved`` and ``unsolved`` now."""
        return Counter(self.status(index) for index in range(self.num_tasks))

    def attempts_of(self, task_index: int) -> tuple[int, int]:
        """(scored rollouts, passes) of a task over the whole run."""
        task = self._tasks[task_index]
        return task.attempts, task.passes
