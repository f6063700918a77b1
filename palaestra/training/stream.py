"""``RolloutSampler``: GRPO groups of token-exact rollouts streamed to a trainer, batch by batch.

::

    from palaestra.training import RolloutSampler

    async with RolloutSampler("weather", tasks="tasks.jsonl", group_size=8,
                              policy="http://localhost:8000/v1") as sampler:
        for step in range(100):
            groups = await sampler.batch()         # every task once: 1 group of 8 per task
            trainer.update(groups)                 # the server's weights change in between

One sampler holds one environment client, one model client and one agent for its whole life:
batches reuse them (an environment is built once, a served one connected once), so the seed's
pattern (the same 1,000 tasks run 100 times with policy updates in between) never restarts
an environment. ``stream`` yields each group as soon as its last rollout finishes, for
asynchronous RL; ``batch`` waits for all of them. Rollouts run at bounded concurrency on a
fixed set of worker coroutines (the collector's way: no task, thread or process per rollout).

The model captures tokens: token-in/token-out mode unless the ``ModelConfig`` says
``return_tokens`` (message mode: a rollout the server re-tokenised is a tree of calls, one
``Rollout`` per leaf, as is one whose harness compacted, retried or branched:
``palaestra.training.tree``).
Each rollout's request carries its own ``seed`` (from the sampler's ``seed``, the group and
the sample), so the samples of a group differ on a seeded backend such as the local model
(which would otherwise answer one sample per prompt), and a run is reproducible.

Which tasks a batch runs is the ``TaskSampler``'s choice: every task by default, or, with
``task_sampler={...}``, the ones not yet saturated (see ``palaestra.training.sampler``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import warnings
import zlib
from collections.abc import AsyncGenerator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, TypeAlias, cast

from palaestra.agents.base import Agent, BoundAgent
from palaestra.agents.context import RolloutContext
from palaestra.collection.assembly import (
    AGENT_REF_TYPE,
    FoundEnvironment,
    build_agent,
    build_model,
    find,
    open_environment,
    opened_user_model,
    user_model_here,
)
from palaestra.collection.checkpoints import CheckpointLog
from palaestra.collection.collector import UNREACHABLE_STOP
from palaestra.collection.records import dispatch_row
from palaestra.collection.tasks import check_input_file, read_tasks, task_problem
from palaestra.distributed.codec import encode_result, result_of
from palaestra.environment.base import Environment
from palaestra.environment.running.client import EnvironmentClient
from palaestra.errors import ConfigError, ModelAuthError, RolloutFailure, ServiceUnreachable
from palaestra.models.affinity import RolloutScope
from palaestra.models.base import Model
from palaestra.models.versions import PolicyClock, version_age
from palaestra.observe.metrics_counts import StalenessCounts
from palaestra.run.collect import default_concurrency, run_spec
from palaestra.spec import EnvSpec, ModelConfig, RunSpec
from palaestra.training.rollouts import (
    ON_FAILURE,
    ON_STALE,
    Group,
    OnFailure,
    OnStale,
    Rollout,
    RolloutFailed,
    RolloutStats,
    failed_rollout,
    rollouts_of,
)
from palaestra.training.sampler import TaskSampler, TasksSaturated
from palaestra.types import AgentResult, Failure, FailureKind, JsonDict
from palaestra.wire.rows import PARAMS

__all__ = ["Policy", "RolloutSampler", "Tasks"]

Policy: TypeAlias = str | ModelConfig | Model
"""``"local"``, an OpenAI-compatible base URL, a name in ``palaestra_models.yaml``, a
``ModelConfig``, or a built ``Model`` (the caller keeps owning it)."""

Tasks: TypeAlias = Sequence[JsonDict] | str | os.PathLike[str] | None
"""Task rows, a JSONL file of them, or None (``num_tasks`` generated, else the examples)."""


@dataclass(slots=True)
class _Pending:
    """A group whose rollouts are still running."""

    group: Group
    results: list[list[Rollout] | None]
    """Each sample's rollouts: one per leaf of its call tree, or its failure."""
    left: int
    attempts: list[int] | None = None
    """With ``checkpoints``: each sample's attempt, whose checkpoint ends with the group."""


class RolloutSampler:
    """Groups of rollouts of a run's tasks by its policy, for an RL trainer.

    - ``spec``: the run, a ``RunSpec`` as ``palaestra.collect`` takes it (``palaestra.run_spec(
      env=..., model=..., sampling=..., agent=..., user_model=...)``): its environment, its
      model (the policy: token mode is switched on unless its options say ``return_tokens``;
      its ``sampling`` overrides ``temperature``, ``top_p``, ``max_output_tokens`` of every
      task), its agent (default: the environment's own) and its user model (an environment's
      simulated user; never trained: its turns are prompt tokens of the policy's next call).
      Its collection's ``input``, ``num_tasks``, ``seed`` and ``concurrency`` are the
      defaults of the keywords of those names. The older form, an environment and the run's
      parts as keywords (``env_args``, ``env_url``, ``server_token``, ``sampling``,
      ``agent``, ``agent_options``, ``policy``/``user_model`` as a name or config), still
      works with a ``DeprecationWarning``; it goes in 0.3.
    - ``tasks``: task rows, a JSONL path, or None: ``num_tasks`` from the environment's
      generator (with ``seed``), else its example tasks. Held in memory, indexed from 0.
    - ``group_size``: rollouts per task in a group (GRPO's samples per prompt).
    - ``policy`` / ``user_model``: a built ``Model`` to use instead of the spec's (the caller
      keeps owning it).
    - ``concurrency``: rollouts in flight (default 16, 1 for the local model).
    - ``on_failure``: ``"exclude"``, ``"mask"`` or ``"raise"`` (``palaestra.training.rollouts``).
    - ``task_sampler``: a ``TaskSampler``, or a dict of its options, to skip saturated tasks.
    - ``seed_requests``: give each rollout's request its own ``seed`` (default on).
    - ``policy_version``: the version the policy's engines serve (see the property); every
      rollout records the version of each model request (``Rollout.policy_versions``).
    - ``max_staleness``: a scored rollout whose requests were served by versions more than
      this apart, the current ``policy_version`` counting as the newest, is ``stale``:
      ``on_stale="mask"`` (default) zeroes its loss mask and keeps it in its group (its
      reward still counts in the group's baseline), ``"exclude"`` leaves it out. Counted in
      ``stats.stale`` (and ``stats.stale_excluded``).
    - ``checkpoints``: a file where the rollouts of a durable environment (``Environment.
      export_state``) are checkpointed at every turn, and kept when finished, until their group
      is handed over; a sampler started again on it continues the groups it plans again with
      the same ``group_id`` (restore ``step`` and ``next_group_id``). See ``stream``.

    Use it as an async context manager (or ``await open()`` / ``aclose()``). A mistake in the
    arguments or the tasks is a one-line ``ConfigError`` from the constructor or ``open``.
    """

    def __init__(
        self,
        spec: RunSpec | str | Environment | type[Environment] | EnvSpec | None = None,
        /,
        *,
        tasks: Tasks = None,
        num_tasks: int | None = None,
        group_size: int = 8,
        policy: Policy | None = None,
        user_model: str | ModelConfig | Model | None = None,
        concurrency: int | None = None,
        on_failure: OnFailure = "mask",
        task_sampler: TaskSampler | Mapping[str, Any] | None = None,
        seed: int | None = None,
        seed_requests: bool = True,
        policy_version: int | None = None,
        max_staleness: int | None = None,
        on_stale: OnStale = "mask",
        checkpoints: str | os.PathLike[str] | None = None,
        **fields: Any,
    ) -> None:
        if on_failure not in ON_FAILURE:
            raise ConfigError(
                f"on_failure must be one of {', '.join(ON_FAILURE)}, not {on_failure!r}"
            )
        if group_size < 1:
            raise ConfigError(f"group_size must be at least 1, not {group_size}")
        if concurrency is not None and concurrency < 1:
            raise ConfigError(f"concurrency must be at least 1, not {concurrency}")
        if max_staleness is not None and max_staleness < 0:
            raise ConfigError(f"max_staleness must be 0 or more, not {max_staleness}")
        if on_stale not in ON_STALE:
            raise ConfigError(f"on_stale must be one of {', '.join(ON_STALE)}, not {on_stale!r}")
        self.spec: RunSpec = _spec_of(spec, policy, user_model, fields)
        policy = policy if isinstance(policy, Model) else None
        collection = self.spec.collection
        tasks = tasks if tasks is not None else collection.input
        num_tasks = num_tasks if num_tasks is not None else collection.num_tasks
        seed = seed if seed is not None else collection.seed
        concurrency = concurrency or collection.concurrency
        self._given_user_model = user_model if isinstance(user_model, Model) else None
        self._user_models = contextlib.AsyncExitStack()
        self._found: FoundEnvironment | None = find(self.spec.env)
        if self._found is None and self.spec.env.url is None:
            raise ConfigError("name an environment (env=NAME, a class or instance) or env_url")
        self._policy: Policy = policy if policy is not None else token_config(self.spec.model)
        self.tasks: list[JsonDict] = load_tasks(tasks, self._found, num_tasks=num_tasks, seed=seed)
        self.task_sampler = _task_sampler(task_sampler, len(self.tasks), seed)
        self.group_size = group_size
        self.concurrency = concurrency or _default_concurrency(self._policy, self.spec)
        self.on_failure: OnFailure = on_failure
        self.seed = seed
        self.seed_requests = seed_requests
        self.overrides: JsonDict = dict(self.spec.model.sampling)
        self.stats = RolloutStats()
        self.clock = PolicyClock(policy_version)
        self.staleness = StalenessCounts()
        """Span and age of every scored rollout handed over (``Rollout.version_span``,
        ``Rollout.age``); ``palaestra.observe.metrics.staleness_families`` exports them."""
        self.max_staleness = max_staleness
        self.on_stale: OnStale = on_stale
        self.step = 0
        """Batches (calls of ``stream`` or ``batch``) started so far."""
        self._next_group = 0
        self._checkpoints_path = Path(checkpoints) if checkpoints is not None else None
        self._checkpoints: CheckpointLog | None = None
        self._attempts: dict[int, list[int]] = {}
        self._env: EnvironmentClient | None = None
        self._agent: Agent | None = None
        self._model: Model | None = None
        self._owns_model = False
        self._agent_ref: JsonDict = {}
        self._running = 0
        self._unreachable = 0

    # --- life ----------------------------------------------------------------------------

    async def open(self) -> RolloutSampler:
        """Connect the environment, build the agent and the model, and check the model."""
        if self._env is not None:
            return self
        user_model = self._given_user_model or await self._user_models.enter_async_context(
            opened_user_model(user_model_here(self.spec))
        )
        try:
            env, default = await open_environment(
                self.spec.env, self._found, threads=self.concurrency, user_model=user_model
            )
        except BaseException:
            await self._user_models.aclose()
            raise
        try:
            self._agent = build_agent(self.spec.agent, default)
            await self._use(self._policy)
        except BaseException:
            await env.aclose()
            await self._user_models.aclose()
            raise
        self._env = env
        self._agent_ref = {"type": AGENT_REF_TYPE, "name": f"{env.name}_{self._agent.name}"}
        if self._checkpoints_path is not None and self._checkpoints is None:
            self._checkpoints = CheckpointLog.load(self._checkpoints_path, set())
        return self

    async def aclose(self) -> None:
        """Close the agent (one that serves something: a harness agent's gateway), the model
        (when the sampler built it) and the environment."""
        if self._checkpoints is not None:
            checkpoints, self._checkpoints = self._checkpoints, None
            checkpoints.close()
        env, self._env = self._env, None
        close_agent = getattr(self._agent, "aclose", None)
        try:
            if env is not None and callable(close_agent):
                await close_agent()
            await self._drop_model()
        finally:
            try:
                if env is not None:
                    await env.aclose()
            finally:
                await self._user_models.aclose()

    async def __aenter__(self) -> RolloutSampler:
        return await self.open()

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    @property
    def next_group_id(self) -> int:
        """The ``group_id`` the next planned group gets. A trainer that restarts with
        ``checkpoints`` restores it (and ``step``) from its own checkpoint, so the groups it
        plans again get the ids their durable rollouts were checkpointed under."""
        return self._next_group

    @next_group_id.setter
    def next_group_id(self, value: int) -> None:
        self._next_group = value

    @property
    def policy_version(self) -> int | None:
        """The version of the policy the engines serve now, as the trainer says: every model
        request answered after it is set records it (unless the engine reports its own),
        in the rollout's ``policy_versions``. May be set while a batch runs (asynchronous RL:
        the weights were updated in place)."""
        return self.clock.version

    @policy_version.setter
    def policy_version(self, version: int | None) -> None:
        self.clock.version = version

    async def set_policy(self, policy: Policy, *, version: int | None = None) -> None:
        """Sample the next batches from ``policy`` (e.g. a local model with new weights),
        version ``version`` when given (``policy_version``).

        Between batches only: a batch in flight keeps the model it started with. A model the
        sampler built is closed; one given as a ``Model`` stays the caller's.
        """
        if self._running:
            raise RuntimeError("set_policy between batches: a batch is still running")
        if version is not None:
            self.clock.version = version
        if not isinstance(policy, Model):
            policy = token_config(_model_config(policy, self.spec))
        await self._drop_model()
        await self._use(policy)
        self._policy = policy

    @property
    def model(self) -> Model:
        """The model the next batch samples from."""
        if self._model is None:
            raise RuntimeError("the sampler is not open: use `async with` or await open()")
        return self._model

    async def _use(self, policy: Policy) -> None:
        model = policy if isinstance(policy, Model) else build_model(_as_config(policy))
        try:
            await model.check()
        except BaseException:
            if model is not policy:
                await model.aclose()
            raise
        self._model, self._owns_model = model, model is not policy

    async def _drop_model(self) -> None:
        model, self._model = self._model, None
        if model is not None and self._owns_model:
            await model.aclose()

    # --- batches -------------------------------------------------------------------------

    async def batch(
        self,
        tasks: int | Sequence[int] | None = None,
        *,
        group_size: int | Sequence[int] | None = None,
    ) -> list[Group]:
        """Every group of the next batch, in the order they were planned (see ``stream``)."""
        stream = self._stream(tasks, group_size=group_size, hand_over=False)
        async with contextlib.aclosing(stream) as groups:
            done = [group async for group in groups]
        for group in done:  # the trainer has them now: their rollouts need no checkpoint
            self._hand_over(group)
        return sorted(done, key=lambda group: group.group_id)

    async def stream(
        self,
        tasks: int | Sequence[int] | None = None,
        *,
        group_size: int | Sequence[int] | None = None,
    ) -> AsyncGenerator[Group, None]:
        """Run one batch; yield each group as soon as all its rollouts finished.

        ``tasks``: None for the task sampler's pick of every task (each once), a number for
        its next that many, or explicit task indices (repeats allowed). ``group_size``: the
        sampler's, or one size for all, or one per task. With ``on_failure="raise"`` the first
        failed rollout raises ``RolloutFailed`` here; the model found unreachable
        ``UNREACHABLE_STOP`` times in a row, or rejecting the key, raises that error. Leaving
        early (``break``) stops the batch's rollouts once the generator is closed (use
        ``contextlib.aclosing`` to close it at once).

        With ``checkpoints``, each durable rollout is checkpointed at its turn boundaries and
        when it finishes, until its group is handed over (yielded here; returned by
        ``batch``): a trainer stopped before that and started again on the same file, with
        ``step`` and ``next_group_id`` restored, continues the groups it plans again.
        """
        inner = self._stream(tasks, group_size=group_size, hand_over=True)
        async with contextlib.aclosing(inner) as groups:
            async for group in groups:
                yield group

    async def _stream(
        self,
        tasks: int | Sequence[int] | None,
        *,
        group_size: int | Sequence[int] | None,
        hand_over: bool,
    ) -> AsyncGenerator[Group, None]:
        if self._env is None or self._agent is None or self._model is None:
            raise RuntimeError("the sampler is not open: use `async with` or await open()")
        plan = self._plan(tasks, group_size)
        step, self.step = self.step, self.step + 1
        pending: list[_Pending] = []
        for task_index, size in plan:
            group = Group(self._next_group, step, task_index, self.tasks[task_index], size)
            self._next_group += 1
            pending.append(_Pending(group, [None] * size, size))
        runner = BoundAgent(self._agent, self._env, self._model)
        jobs = ((item, sample) for item in pending for sample in range(item.group.size))
        finished: asyncio.Queue[Group | BaseException] = asyncio.Queue()
        workers = [
            asyncio.create_task(self._work(runner, jobs, finished))
            for _ in range(min(self.concurrency, sum(size for _, size in plan)))
        ]
        self._running += 1
        try:
            for _ in pending:
                item = await finished.get()
                if isinstance(item, BaseException):
                    raise item
                if hand_over:
                    self._hand_over(item)
                yield item
        finally:
            self._running -= 1
            for worker in workers:
                worker.cancel()
            await asyncio.gather(*workers, return_exceptions=True)

    def _hand_over(self, group: Group) -> None:
        """The trainer has ``group``: its rollouts' checkpoints end (``checkpoints``)."""
        attempts = self._attempts.pop(group.group_id, None)
        if self._checkpoints is not None and attempts is not None:
            for sample, attempt in enumerate(attempts):
                self._checkpoints.end((group.group_id, sample), attempt)

    def _plan(
        self, tasks: int | Sequence[int] | None, group_size: int | Sequence[int] | None
    ) -> list[tuple[int, int]]:
        if tasks is None or isinstance(tasks, int):
            indices = self.task_sampler.select(tasks)
            if not indices:  # (it takes at least one task unless every one was skipped)
                raise TasksSaturated(self.task_sampler)
        else:
            indices = list(tasks)
            for index in indices:
                if not isinstance(index, int) or not 0 <= index < len(self.tasks):
                    raise ConfigError(
                        f"task index {index!r} is not one of 0..{len(self.tasks) - 1}"
                    )
        if group_size is None or isinstance(group_size, int):
            size = self.group_size if group_size is None else group_size
            sizes = [size] * len(indices)
        else:
            sizes = list(group_size)
            if len(sizes) != len(indices):
                raise ConfigError(f"{len(sizes)} group sizes for {len(indices)} tasks")
        if any(size < 1 for size in sizes):
            raise ConfigError(f"a group size must be at least 1, not {min(sizes)}")
        return list(zip(indices, sizes, strict=True))

    async def _work(
        self,
        runner: BoundAgent,
        jobs: Iterator[tuple[_Pending, int]],
        finished: asyncio.Queue[Group | BaseException],
    ) -> None:
        try:
            for item, sample in jobs:
                rollouts = await self._rollout(runner, item, sample)
                rollout = rollouts[0]
                if rollout.failure is not None and self.on_failure == "raise":
                    self.stats.count(rollout, self.on_failure)
                    raise RolloutFailed(rollout)
                item.results[sample] = rollouts
                item.left -= 1
                if item.left == 0:
                    finished.put_nowait(self._finish(item))
        except Exception as error:  # handed to the consumer, which raises it and stops the batch
            finished.put_nowait(error)

    async def _rollout(self, runner: BoundAgent, item: _Pending, sample: int) -> list[Rollout]:
        group = item.group
        dispatched = dispatch_row(
            group.task,
            task_index=group.task_index,
            rollout_index=sample,
            agent_ref=self._agent_ref,
            overrides=self.overrides,
        )
        if self.seed_requests:
            dispatched[PARAMS] = {**dispatched[PARAMS], "seed": self._request_seed(group, sample)}
        identity: dict[str, Any] = {
            "group_id": group.group_id,
            "task_index": group.task_index,
            "sample": sample,
            "step": group.step,
        }
        version = self.clock.version
        task = cast(JsonDict, dispatched)
        log = self._checkpoints
        if log is None:
            context = RolloutContext(scope=RolloutScope(clock=self.clock))
            outcome = await self._attempt(runner, task, identity, context)
            return self._outcome(outcome, identity, version)
        pair = (group.group_id, sample)
        durability = log.begin(pair)
        if item.attempts is None:
            item.attempts = [0] * group.size
        item.attempts[sample] = durability.attempt
        resume = durability.resume
        if resume is not None and resume.get("task_index") != group.task_index:
            durability.resume = resume = None  # another task under this id: not its checkpoint
        save, task_index = durability.save, group.task_index
        if resume is not None and "result" in resume:  # it finished before the stop: kept
            try:
                return self._outcome(result_of(resume), identity, version)
            except RolloutFailure as error:
                return [failed_rollout(Failure(error.kind, error.reason), None, **identity)]
        durability.save = lambda checkpoint: save(_tagged(checkpoint, task_index))
        context = RolloutContext(durability, RolloutScope(clock=self.clock))
        outcome = await self._attempt(runner, task, identity, context)
        if isinstance(outcome, AgentResult):  # kept until its group is whole (``_finish``)
            save(encode_result(outcome, {"task_index": task_index}))
        return self._outcome(outcome, identity, version)

    async def _attempt(
        self,
        runner: BoundAgent,
        dispatched: JsonDict,
        identity: dict[str, Any],
        context: RolloutContext,
    ) -> AgentResult | Rollout:
        """The rollout's result, or its failed ``Rollout`` when the runner raised. Its scope
        holds the sampler's policy clock, which versions the calls an engine does not."""
        try:
            return await runner.run(dispatched, context)  # its task: a plain dict
        except ModelAuthError:
            raise  # every rollout would fail alike
        except ServiceUnreachable as error:
            self._unreachable += 1
            if error.at_once or self._unreachable >= UNREACHABLE_STOP:
                raise
            failure = Failure(error.kind, error.reason, transient=True)
            return failed_rollout(failure, None, **identity)
        except RolloutFailure as error:
            return failed_rollout(Failure(error.kind, error.reason), None, **identity)
        except Exception as error:  # a bug in one rollout fails that rollout, explicitly
            failure = Failure(FailureKind.INTERNAL_ERROR, f"{type(error).__name__}: {error}")
            return failed_rollout(failure, None, **identity)

    def _outcome(
        self, result: AgentResult | Rollout, identity: dict[str, Any], version: int | None
    ) -> list[Rollout]:
        if isinstance(result, Rollout):
            return [result]
        self._unreachable = 0
        if result.policy_versions is None and version is not None and result.model_calls:
            # A model that is not reached over HTTP (the embedded one) records no version per
            # request; its weights change only between batches (set_policy), so each call was
            # served by the version current when the rollout started.
            result.policy_versions = [version] * result.model_calls
        rollouts = rollouts_of(result, **identity)
        bound = self.max_staleness
        if bound is not None and rollouts[0].failure is None:
            rollouts = [self._bound_staleness(rollout, bound) for rollout in rollouts]
        return rollouts

    def _bound_staleness(self, rollout: Rollout, bound: int) -> Rollout:
        """``rollout`` marked stale (and masked) when its requests were served by policies
        more than ``bound`` versions apart, counting the current version as the newest."""
        versions = rollout.policy_versions
        if not versions:
            return rollout
        newest = max(versions) if self.clock.version is None else self.clock.version
        if max(newest, max(versions)) - min(versions) <= bound:
            return rollout
        masked = [0] * len(rollout.loss_mask) if self.on_stale == "mask" else rollout.loss_mask
        return dataclasses.replace(rollout, stale=True, loss_mask=masked)

    def _request_seed(self, group: Group, sample: int) -> int:
        # crc32 of the identity: cheap, and stable across processes (unlike hash()).
        return zlib.crc32(f"{self.seed}:{group.group_id}:{sample}".encode()) & 0x7FFFFFFF

    def _finish(self, item: _Pending) -> Group:
        group = item.group
        if item.attempts is not None:  # ended when the trainer has the group (``_hand_over``)
            self._attempts[group.group_id] = item.attempts
        current = self.clock.version
        for rollouts in item.results:
            assert rollouts is not None
            for rollout in rollouts:
                first = rollout.leaf == 0  # what is counted per rollout is counted once
                if rollout.failure is None and rollout.policy_versions:
                    age = version_age(rollout.policy_versions, current)
                    rollout = dataclasses.replace(rollout, age=age)
                    if first:
                        self.staleness.add(rollout.version_span, age, stale=rollout.stale)
                self.stats.count(rollout, self.on_failure)
                if rollout.stale:
                    self.stats.stale += first
                    if self.on_stale == "exclude":
                        self.stats.stale_excluded += first
                        continue
                if rollout.failure is not None:
                    group.failures.append(rollout)
                    if self.on_failure == "exclude":
                        continue
                group.rollouts.append(rollout)
        self.task_sampler.record(group.task_index, group.sample_rewards.values())
        self.stats.groups += 1
        return group


def _tagged(checkpoint: JsonDict | bytes, task_index: int) -> JsonDict | bytes:
    """A sampler's checkpoint names its task, so a restarted trainer that plans another task
    under the same group id does not resume it."""
    if isinstance(checkpoint, bytes):  # an encoded JSON object: the field goes before "}"
        return checkpoint[:-1] + b',"task_index":%d}' % task_index
    return {**checkpoint, "task_index": task_index}


def token_config(config: ModelConfig) -> ModelConfig:
    """``config`` capturing tokens: token mode switched on unless it says ``return_tokens``.

    A config that switches both off is a ``ConfigError``: a trainer needs the token ids.
    """
    options = config.options
    if "token_mode" not in options and "return_tokens" not in options:
        return config.model_copy(update={"options": {**options, "token_mode": True}})
    if not (options.get("token_mode") or options.get("return_tokens")):
        raise ConfigError(
            f"model backend '{config.backend}': a trainer needs token ids; set the option "
            "token_mode (or return_tokens) to true"
        )
    return config


_RUN_KEYWORDS = ("env", "env_args", "env_url", "server_token", "sampling", "agent", "agent_options")
"""The run's parts a sampler once took as keywords of its own, before it took a ``RunSpec``."""


def _spec_of(
    spec: RunSpec | str | Environment | type[Environment] | EnvSpec | None,
    policy: Policy | None,
    user_model: str | ModelConfig | Model | None,
    fields: dict[str, Any],
) -> RunSpec:
    """The run a sampler samples: ``spec``, or (deprecated) the one its keywords describe."""
    unknown = sorted(set(fields) - set(_RUN_KEYWORDS))
    if unknown:
        raise TypeError(f"RolloutSampler got an unexpected keyword argument '{unknown[0]}'")
    configured = [
        name
        for name, value in (("policy", policy), ("user_model", user_model))
        if value is not None and not isinstance(value, Model)
    ]
    if isinstance(spec, RunSpec):
        if fields or configured:
            given = ", ".join([*fields, *configured])
            raise TypeError(
                f"pass the run as a RunSpec or as keyword arguments, not both (also {given}): "
                "a RunSpec's model is the policy; a built Model may be given as policy"
            )
        return spec
    if spec is None and not fields and not configured:
        return RunSpec()
    warnings.warn(
        "RolloutSampler(env, policy=..., env_args=..., ...) is deprecated: pass the run as a "
        "RunSpec, RolloutSampler(palaestra.run_spec(env=..., model=..., ...), group_size=...) "
        "(a built Model may still be given as policy=); the old keywords go in 0.3",
        DeprecationWarning,
        stacklevel=3,
    )
    if spec is not None:
        fields = {**fields, "env": spec}
    if policy is not None and not isinstance(policy, Model):
        fields["model"] = policy
    if user_model is not None and not isinstance(user_model, Model):
        fields["user_model"] = user_model
    return run_spec(**{k: v for k, v in fields.items() if v is not None})


def _default_concurrency(policy: Policy, spec: RunSpec) -> int:
    if isinstance(policy, Model):  # the embedded model answers one request at a time
        return 1 if type(policy).__module__.startswith("palaestra.models.local") else 16
    return default_concurrency(spec)


def _model_config(policy: str | ModelConfig, spec: RunSpec) -> ModelConfig:
    return run_spec(model=policy, sampling=spec.model.sampling).model


def _as_config(policy: Policy) -> ModelConfig:
    assert isinstance(policy, ModelConfig)
    return policy


def load_tasks(
    tasks: Tasks, found: FoundEnvironment | None, *, num_tasks: int | None, seed: int
) -> list[JsonDict]:
    """The task rows: given, read from a JSONL file, generated, or the environment's examples.

    The first row that is not a task is a one-line ``ConfigError`` naming it (file and line,
    or its index, and the field).
    """
    if num_tasks is not None:
        if tasks is not None or found is None:
            raise ConfigError("num_tasks generates tasks from the environment: pass no tasks")
        try:
            rows = list(found.build().generate_tasks(num_tasks, seed))
        except NotImplementedError as error:
            raise ConfigError(f"{error}: pass tasks") from None
        return _checked(rows, f"environment '{found.name}' generated task")
    if tasks is None:
        if found is None or found.example_tasks is None:
            raise ConfigError("pass tasks: there are no example tasks to fall back on")
        tasks = found.example_tasks
    if isinstance(tasks, str | os.PathLike):
        path = Path(tasks)
        check_input_file(path)
        read: list[JsonDict] = []
        for line in read_tasks(path):
            if line.error is not None:
                raise ConfigError(line.error.describe())
            read.append(line.row)
        if not read:
            raise ConfigError(f"{path} holds no tasks")
        return read
    return _checked(list(tasks), "task")


def _checked(rows: list[JsonDict], what: str) -> list[JsonDict]:
    if not rows:
        raise ConfigError("no tasks to sample from")
    for index, row in enumerate(rows):
        problem = task_problem(row)
        if problem is not None:
            field, reason = problem
            where = f" field '{field}'" if field else ""
            raise ConfigError(f"{what} {index}:{where}: {reason}")
    return rows


def _task_sampler(
    given: TaskSampler | Mapping[str, Any] | None, num_tasks: int, seed: int
) -> TaskSampler:
    if isinstance(given, TaskSampler):
        if given.num_tasks != num_tasks:
            raise ConfigError(f"the task sampler is for {given.num_tasks} tasks, not {num_tasks}")
        return given
    if given is None:
        return TaskSampler(num_tasks, seed=seed, skip_saturated=False)
    try:
        return TaskSampler(num_tasks, **{"seed": seed, **given})
    except TypeError as error:
        raise ConfigError(f"task_sampler: {error}") from None
