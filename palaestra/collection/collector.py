"""The collector: streams tasks through an agent at bounded concurrency, writing as it goes.

Tasks are read lazily and at most ``concurrency`` rollouts are resident at once, so memory
does not grow with the input. Each finished rollout is appended and flushed before the next
is taken, so a killed run can be resumed without loss or duplication. One collector writes an
output at a time (``lock``), and a resume must be the same run (``identity``).

A rollout ends as a scored row (its verdict has a finite numeric reward) or as a failure
record; nothing that happens to one rollout (a broken verdict, a row that is not JSON) ends the
run. The run itself stops, resumable, when a service every rollout needs is gone (the model, a
model the environment uses (``ModelOutage``: the simulated user's, a judge) or a served
environment unreachable ``UNREACHABLE_STOP`` times in a row, a model timing out that many
calls in a row with no answer between (``ModelHung``), the API key rejected) or when its files
cannot be written (disk full). A rollout that met such an outage is recorded ``transient``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, cast

from palaestra.agents.base import RolloutRunner
from palaestra.agents.context import NO_CONTEXT, RolloutContext
from palaestra.agents.durable import Durability
from palaestra.collection.aggregate import RunMetrics
from palaestra.collection.checkpoints import CheckpointLog, checkpoints_path
from palaestra.collection.digests import check_task_digests, tasks_digest
from palaestra.collection.files import (
    JsonlAppender,
    OutputError,
    Pair,
    RunFiles,
    archive_failures,
    encode,
    failed_attempts,
    finished_pairs,
    keep_dispatched,
    repair_torn_tail,
    writing,
)
from palaestra.collection.identity import (
    check_same_run,
    read_identity,
    run_identity,
    write_identity,
)
from palaestra.collection.lock import OutputLock
from palaestra.collection.records import dispatch_row, failure_row, input_error_row, rollout_row
from palaestra.collection.tasks import InputScan, TaskLine, check_input_file, read_tasks, scan_input
from palaestra.errors import (
    ConfigError,
    InputError,
    ModelAuthError,
    RolloutFailure,
    RunStopped,
    ServiceUnreachable,
    VerifierFailure,
)
from palaestra.observe.metrics_counts import runner_counts
from palaestra.types import AgentResult, Failure, FailureKind, JsonDict
from palaestra.wire.rows import (
    AGENT_REF,
    FACTS,
    AggregateEntry,
    FailureRow,
    RolloutRow,
    SourceRef,
    TaskRow,
)

UNREACHABLE_STOP = 3
"""Consecutive rollouts that found a service unreachable (after retries) before the run stops."""

REASONS_KEPT = 100
"""Distinct failure reasons counted for the summary; more count as one "other" line."""

REASON_LENGTH = 160

SHOWN_WARNINGS = 10
"""Invalid task lines shown as warnings; the rest are only in the failures file."""


@dataclass(slots=True)
class CollectConfig:
    input: Path
    output: Path
    repeats: int = 1
    concurrency: int = 16
    limit: int | None = None
    resume: bool = False
    overwrite: bool = False
    overrides: JsonDict = field(default_factory=dict)
    agent_ref: JsonDict = field(default_factory=dict)
    run_facts: JsonDict = field(default_factory=dict)
    """What the caller knows of the run for its identity (env, agent, model); see ``identity``.
    Default: the ``agent_ref``."""
    observer: RolloutObserver | None = None
    """Told of every rollout that starts and ends (``palaestra.observe`` metrics); None costs
    one attribute test per event."""


@dataclass(slots=True)
class RunSummary:
    """A run as it went. ``done``, ``failures`` and ``truncated`` count this invocation;
    ``scored`` and ``mean_reward`` describe the whole output file (a resume's included)."""

    total: int = 0
    skipped: int = 0
    done: int = 0
    reward_sum: float = 0.0
    failures: Counter[str] = field(default_factory=Counter)
    reasons: Counter[str] = field(default_factory=Counter)
    """Failures of this invocation by ``kind: reason`` (at most ``REASONS_KEPT`` reasons)."""
    truncated: int = 0
    truncated_by: Counter[str] = field(default_factory=Counter)
    """This invocation's truncated rollouts by why they stopped (``AgentResult.truncated``)."""
    continued: int = 0
    """Rollouts of this invocation continued from a checkpoint a stopped run left (a durable
    environment's: ``palaestra.agents.durable``) rather than started again."""
    fenced: int = 0
    """Writes refused because they came from a stale attempt of their rollout."""
    invalid_inputs: int = 0
    before_done: int = 0
    before_reward_sum: float = 0.0
    """The scored rollouts the output already held when this invocation started."""
    stopped_reason: str | None = None
    files: RunFiles | None = None
    aggregate: list[AggregateEntry] = field(default_factory=list)
    """Per agent: agent and key metrics; the per-task group metrics are in the file only."""
    endpoints: list[JsonDict] = field(default_factory=list)
    """Per model endpoint of a pool, this invocation's counts (``ModelPool.endpoint_stats``:
    url, healthy, calls, failures, retries, latency); empty for one endpoint."""
    paused_calls: int = 0
    paused_seconds: float = 0.0
    """Model requests that met an endpoint paused for a weight update, and the seconds they
    slept in the pause: waits, not retries (``palaestra.models.openai.pauses``)."""
    metrics: RunMetrics | None = None
    """The aggregate of the whole output file as the collector kept it (per task: rollouts,
    passes, reward sum, failures): the end-of-run figures come from it, not from a re-read."""

    @property
    def scored(self) -> int:
        """Scored rollouts in the output file."""
        return self.before_done + self.done

    @property
    def mean_reward(self) -> float | None:
        """Mean reward of every scored rollout in the output file."""
        scored = self.scored
        return (self.before_reward_sum + self.reward_sum) / scored if scored else None

    @property
    def failed(self) -> int:
        return sum(self.failures.values())

    def count_failure(self, kind: str, reason: str, count: int = 1) -> None:
        self.failures[kind] += count
        key = f"{kind}: {reason}"
        if len(key) > REASON_LENGTH:
            key = key[: REASON_LENGTH - 3] + "..."
        if key not in self.reasons and len(self.reasons) >= REASONS_KEPT:
            key = "(other reasons)"
        self.reasons[key] += count


class RolloutObserver(Protocol):
    """Told, on the event loop, when a rollout starts and how it ends; must be cheap.

    ``rollout_finished`` follows the row's write, ``rollout_failed`` the failure record's (an
    invalid task line too, which never started), so what an observer counted is on disk.
    """

    def rollout_started(self) -> None: ...
    def rollout_finished(self, result: AgentResult, reward: float) -> None: ...
    def rollout_failed(self, kind: str, result: AgentResult | None) -> None: ...
    def rollout_abandoned(self) -> None:
        """A started rollout ended with no record: the run stopped under it (the key
        rejected, the workers lost, Ctrl-C, a full disk); a resume runs it again."""


class Progress(Protocol):
    """Where the collector reports progress; the CLI shows it, tests may record it.

    ``message`` is a warning. One may also have ``note(text)``, for what a run says that is
    not (``palaestra.collect`` says the metrics URL with it once the port is bound)."""

    def start(self, summary: RunSummary) -> None: ...
    def update(self, summary: RunSummary) -> None: ...
    def message(self, text: str) -> None: ...
    def stop(self) -> None: ...


_ABANDONED, _ENDED, _HALTED = 0, 1, 2
"""How an attempt ended (``_Run._attempt``)."""


@dataclass(frozen=True, slots=True)
class Job:
    task: TaskLine
    rollout_index: int
    attempt: int


async def collect(runner: RolloutRunner, config: CollectConfig, progress: Progress) -> RunSummary:
    """Run every (task, rollout) pair not finished yet; return the run's summary.

    ``ConfigError`` (one line, nothing written) when the output is held by another collector,
    a resume is not the recorded run, or the input or output cannot be used;
    ``ModelAuthError`` when the model endpoint rejects the key before anything ran.
    """
    files = RunFiles(config.output)
    summary = RunSummary(files=files)
    with OutputLock.acquire(files.lock, config.output):
        scan, identity = inspect_run(files, config)
        summary.total = scan.tasks * config.repeats
        await runner.check()
        metrics = RunMetrics()  # what a resumed run has already: its rows, then its failures
        with writing(config.output):
            done_pairs, attempts = prepare_files(files, config, identity, metrics.add_rollout)
            checkpoints = CheckpointLog.load(checkpoints_path(config.output), done_pairs)
        summary.skipped = len(done_pairs)
        metrics.read_failures(files.failures)
        summary.before_done, summary.before_reward_sum = metrics.scored()
        summary.metrics = metrics
        run = _Run(runner, config, summary, progress, files, metrics, checkpoints)
        progress.start(summary)
        try:
            await run.execute(_jobs(config, done_pairs, attempts, run))
        finally:  # also when interrupted (Ctrl-C, SIGTERM): the aggregate of what is done
            run.close()
            progress.stop()
            summary.endpoints = runner.endpoint_stats()
            summary.paused_calls, summary.paused_seconds = _pauses(runner)
            try:
                summary.aggregate = metrics.write(
                    files.aggregate_metrics, endpoints=summary.endpoints
                )
            except OSError as error:
                run.stop(f"{OutputError(files.aggregate_metrics, error)}")
    return summary


def inspect_run(files: RunFiles, config: CollectConfig) -> tuple[InputScan, JsonDict]:
    """Check the output is free (or the same run, resumable), scan the input; change nothing."""
    if config.resume and config.overwrite:
        raise ConfigError(
            "--resume and --overwrite contradict each other: --resume continues the earlier "
            "run, --overwrite deletes it; pass one"
        )
    check_input_file(config.input)
    ours = [*files.all(), files.failure_history, files.identity, files.lock]
    if config.input.resolve() in {p.resolve() for p in ours}:
        raise ConfigError(f"--output {config.output} would overwrite the input file")
    kept = work_to_keep(files)
    if kept is not None and not (config.resume or config.overwrite):
        what = "already exists" if kept == files.output else "holds rollouts a run left unfinished"
        raise ConfigError(
            f"{kept} {what}: pass --resume to continue that run or --overwrite to start over"
        )
    recorded = None if starts_over(files, config) else read_identity(files.identity)
    known = (recorded or {}).get("input")
    if not isinstance(known, dict) or known.get("path") != str(config.input.resolve()):
        known = None
    scan = scan_input(config.input, limit=config.limit, known=known)
    identity = run_identity(
        scan,
        repeats=config.repeats,
        sampling=config.overrides,
        facts=config.run_facts or {AGENT_REF: config.agent_ref},
        tasks_sha256=tasks_digest(config.input),
    )
    if recorded is not None:
        check_task_digests(config.output, config.input)  # before the identity: names the folder
        check_same_run(files.identity, recorded, identity)
    return scan, identity


def work_to_keep(files: RunFiles) -> Path | None:
    """The file of an earlier run at this output that holds work a fresh start would lose:
    its rows (any byte: a torn first row is resumed, not dropped), else the checkpoints of
    rollouts it left unfinished; None when there is none (no run, or one that wrote no row)."""
    for path in (files.output, checkpoints_path(files.output)):
        with contextlib.suppress(OSError):
            if path.stat().st_size > 0:
                return path
    return None


def starts_over(files: RunFiles, config: CollectConfig) -> bool:
    """Whether the run replaces every file an earlier one left here: with ``overwrite``, and
    without ``resume`` when there is no work to keep (``work_to_keep``). The materialized
    inputs, failures, identity and reports of a run that wrote no row (killed before its
    first, or its output deleted) are replaced, whatever command made them."""
    return config.overwrite or (not config.resume and work_to_keep(files) is None)


def prepare_files(
    files: RunFiles,
    config: CollectConfig,
    identity: JsonDict,
    each_done: Callable[[JsonDict], None] | None = None,
) -> tuple[set[Pair], Counter[Pair]]:
    """Start over, or make an earlier run's files resumable; return what it finished (each of
    its rows also given to ``each_done``)."""
    if starts_over(files, config):
        for path in [*files.all(), files.failure_history, checkpoints_path(config.output)]:
            path.unlink(missing_ok=True)
        write_identity(files.identity, identity)
        return set(), Counter()
    repair_torn_tail(files.output)
    repair_torn_tail(files.materialized_inputs)
    done = finished_pairs(files.output, each_done)
    keep_dispatched(files.materialized_inputs, done)
    archive_failures(files)
    write_identity(files.identity, identity)
    return done, failed_attempts(files.failure_history)


def _jobs(
    config: CollectConfig, done: set[Pair], attempts: Counter[Pair], run: _Run
) -> Iterator[Job]:
    for item in read_tasks(config.input, limit=config.limit):
        if item.error is not None:
            run.record_input_error(item.error, item.index)
            continue
        for rollout_index in range(config.repeats):
            pair = (item.index, rollout_index)
            if pair not in done:
                yield Job(item, rollout_index, attempts[pair] + 1)


class _Run:
    """One execution of the collector: its workers, writers and counters."""

    def __init__(
        self,
        runner: RolloutRunner,
        config: CollectConfig,
        summary: RunSummary,
        progress: Progress,
        files: RunFiles,
        metrics: RunMetrics,
        checkpoints: CheckpointLog | None = None,
    ) -> None:
        self.runner, self.config = runner, config
        self.checkpoints = checkpoints or CheckpointLog(checkpoints_path(config.output))
        self._attempt_of = self._durable_attempt if runner.durable else self._attempt
        """How a rollout is attempted, chosen once: lent a ``Durability`` when the runner's
        rollouts may checkpoint (``RolloutRunner``: unless it says ``durable = False``),
        else as is (nothing for durability to pay)."""
        self.metrics = metrics
        self.summary, self.progress = summary, progress
        self.outputs = JsonlAppender(files.output)
        self.inputs = JsonlAppender(files.materialized_inputs, flush_each=False)
        self.failures = JsonlAppender(files.failures)
        self.unreachable_streak = 0
        self.observer = config.observer
        env = config.run_facts.get("env")  # its version is stamped in every rollout's row
        self.env_version = env.get("version") if isinstance(env, dict) else None

    def stop(self, reason: str) -> None:
        """Take no more jobs; the first reason given is the one reported."""
        if self.summary.stopped_reason is None:
            self.summary.stopped_reason = reason

    async def execute(self, jobs: Iterator[Job]) -> None:
        workers = [
            asyncio.create_task(self._worker(jobs)) for _ in range(max(1, self.config.concurrency))
        ]
        try:
            await asyncio.gather(*workers)
        finally:
            for worker in workers:
                worker.cancel()

    async def _worker(self, jobs: Iterator[Job]) -> None:
        while self.summary.stopped_reason is None:
            try:
                job = next(jobs, None)
                if job is None:
                    return
                await self._run_job(job)
            except OutputError as error:  # disk full, file gone read-only: nothing can be kept
                self.stop(f"{error}; make room and run the same command with --resume")

    async def _run_job(self, job: Job) -> None:
        dispatched = dispatch_row(
            job.task.row,
            task_index=job.task.index,
            rollout_index=job.rollout_index,
            agent_ref=self.config.agent_ref,
            overrides=self.config.overrides,
        )
        self.inputs.write(encode(dispatched))
        observer = self.observer
        if observer is None:
            await self._attempt_of(dispatched, job)
            return
        observer.rollout_started()
        try:
            outcome = await self._attempt_of(dispatched, job)
        except BaseException:  # cancelled, or its record could not be written (disk full)
            observer.rollout_abandoned()
            raise
        if outcome == _ABANDONED:
            observer.rollout_abandoned()

    async def _durable_attempt(self, dispatched: TaskRow, job: Job) -> int:
        """``_attempt``, lent its ``Durability`` (``palaestra.agents.durable``): the rollout's
        checkpoint to resume from, and where to save new ones. Its record is written only
        while it is the rollout's newest attempt (``CheckpointLog.current``)."""
        pair = (job.task.index, job.rollout_index)
        checkpoints = self.checkpoints
        durability = checkpoints.begin(pair)
        try:
            outcome = await self._attempt(dispatched, job, durability)
        finally:
            if checkpoints.error is not None:
                error, checkpoints.error = checkpoints.error, None
                raise error  # the run stops (``_worker``), resumable
        if outcome == _ENDED:
            checkpoints.end(pair, durability.attempt)
        else:
            checkpoints.release(pair, durability.attempt)
        return outcome

    async def _attempt(
        self, dispatched: TaskRow, job: Job, durability: Durability | None = None
    ) -> int:
        """Run one dispatched task and record how it ended: ``_ENDED`` (recorded, or fenced),
        ``_HALTED`` (a failure recorded, but a service's, not the rollout's: its checkpoint
        stays) or ``_ABANDONED`` (the run stopped under it with nothing recorded: a resume
        runs it again, from its checkpoint if it has one). The attempt is ``durability``'s
        as it is when the runner returns (a dispatcher renews it when a worker dies); an
        attempt lent none has no rival (each rollout of a run starts once)."""
        try:
            context = NO_CONTEXT if durability is None else RolloutContext(durability)
            result = await self.runner.run(cast(JsonDict, dispatched), context)  # a plain dict
        except ModelAuthError as error:  # every rollout would fail alike: write nothing
            self.stop(error.reason)
            return _ABANDONED
        except RunStopped as error:  # the runner cannot go on (its workers keep dying)
            self.stop(error.reason)
            return _ABANDONED
        except ServiceUnreachable as error:
            if not self._current(job, durability):
                return _ENDED
            failure = Failure(error.kind, error.reason, transient=True)
            self._record_failure(dispatched, failure, None, job, error.worker_reruns)
            self.unreachable_streak += 1
            if error.at_once or self.unreachable_streak >= UNREACHABLE_STOP:
                self.stop(error.stop_reason())  # at once: a model counted its timeouts
            return _HALTED  # recorded, but the rollout did nothing wrong: keep its checkpoint
        except RolloutFailure as error:  # a runner that raises its failure, not returns it
            if not self._current(job, durability):
                return _ENDED
            failure = Failure(error.kind, error.reason)
            self._record_failure(dispatched, failure, None, job, error.worker_reruns)
            return _ENDED
        except Exception as error:  # a bug in one rollout must not end the run
            if not self._current(job, durability):
                return _ENDED
            reason = f"{type(error).__name__}: {error}"
            self._record_failure(dispatched, Failure(FailureKind.INTERNAL_ERROR, reason), None, job)
            return _ENDED
        if durability is not None and not self._current(job, durability):
            return _ENDED
        self.unreachable_streak = 0
        self._record_result(dispatched, result, job)
        return _ENDED

    def _current(self, job: Job, durability: Durability | None) -> bool:
        """Whether the attempt may write its record (a stale one may not: another attempt of
        the rollout owns it; an attempt lent no ``durability`` has no rival)."""
        if durability is None:
            return True
        if self.checkpoints.current((job.task.index, job.rollout_index), durability.attempt):
            return True
        self.summary.fenced += 1
        return False

    def _record_result(self, dispatched: TaskRow, result: AgentResult, job: Job) -> None:
        failure = result.failure or (result.verdict.failure if result.verdict else None)
        if failure is not None:
            self._record_failure(dispatched, failure, result, job)
            return
        try:  # a verdict that is not a score, or a row that is not JSON, fails this rollout
            row = rollout_row(dispatched, result, attempt=job.attempt)
            self._stamp(row)
            line = encode(row)
        except VerifierFailure as error:
            self._record_failure(dispatched, Failure(error.kind, error.reason), result, job)
            return
        except Exception as error:
            reason = f"the rollout's row cannot be written: {type(error).__name__}: {error}"
            failure = Failure(FailureKind.INTERNAL_ERROR, reason)
            self._record_failure(dispatched, failure, None, job, result.worker_reruns)
            return
        self.outputs.write(line)
        self.metrics.add_rollout(row)
        self.summary.done += 1
        self.summary.reward_sum += row["reward"]
        if result.truncated:
            self.summary.truncated += 1
            self.summary.truncated_by[result.truncated] += 1
        if result.resumed is not None:
            self.summary.continued += 1
        if self.observer is not None:
            self.observer.rollout_finished(result, row["reward"])
        self.progress.update(self.summary)

    def _record_failure(
        self,
        dispatched: TaskRow,
        failure: Failure,
        result: AgentResult | None,
        job: Job,
        worker_reruns: int = 0,
    ) -> None:
        """``worker_reruns``: of a failure without its result (a result carries its own)."""
        source: SourceRef = {"path": str(self.config.input), "line": job.task.line}
        if result is not None:
            worker_reruns = result.worker_reruns
        row = failure_row(
            dispatched, failure, result, attempt=job.attempt, worker_reruns=worker_reruns
        )
        row["source"] = source
        self._stamp(row)
        try:
            line = encode(row)
        except Exception:  # the partial trajectory is not JSON: keep the record without it
            row = failure_row(
                dispatched, failure, None, attempt=job.attempt, worker_reruns=worker_reruns
            )
            row["source"] = source
            self._stamp(row)
            line = encode(row)
        self.failures.write(line)
        self.metrics.add_failure(row)
        self.summary.count_failure(str(failure.kind), failure.reason)
        if self.observer is not None:
            self.observer.rollout_failed(str(failure.kind), result)
        self.progress.update(self.summary)

    def _stamp(self, row: RolloutRow | FailureRow) -> None:
        """Record the environment's version in the row's facts (``RunFacts.env_version``)."""
        if self.env_version is not None:
            row[FACTS]["env_version"] = self.env_version

    def record_input_error(self, error: InputError, task_index: int) -> None:
        row = input_error_row(error, task_index=task_index)
        self.failures.append(row)
        self.metrics.add_failure(row)
        self.summary.invalid_inputs += 1
        kind = str(FailureKind.INVALID_INPUT)
        self.summary.count_failure(kind, _without_line(error), self.config.repeats)
        if self.observer is not None:
            self.observer.rollout_failed(kind, None)
        if self.summary.invalid_inputs <= SHOWN_WARNINGS:
            self.progress.message(f"skipped {error.describe()}")
        if self.summary.invalid_inputs == SHOWN_WARNINGS:
            self.progress.message(
                f"further invalid task lines are not shown: see {self.failures.path}"
            )
        self.progress.update(self.summary)

    def close(self) -> None:
        """Write what is pending and close the files; a failed write stops the run."""
        for appender in (self.outputs, self.inputs, self.failures):
            try:
                appender.close()
            except OutputError as error:
                self.stop(f"{error}; make room and run the same command with --resume")
        self.checkpoints.close()


def _pauses(runner: RolloutRunner) -> tuple[int, float]:
    """The model requests a runner's model (or its workers' models) saw paused, and the
    seconds they slept in pauses; none for a runner whose model runs elsewhere."""
    counts = runner.worker_counts()
    if counts is None:  # its rollouts run here
        counts = runner_counts(runner)
    entries = counts.get("endpoints") or []
    calls = sum(int(entry.get("paused_calls") or 0) for entry in entries)
    return calls, sum(float(entry.get("paused_seconds") or 0.0) for entry in entries)


def _without_line(error: InputError) -> str:
    """An input error's reason with its field, not its line: alike lines count as one reason."""
    return f"field '{error.field}': {error.reason}" if error.field else error.reason
