"""The collector: streams tasks through an agent at bounded concurrency, writing as it goes.

Tasks are read lazily and at most ``concurrency`` rollouts are resident at once, so memory
does not grow with the input. Each finished rollout is appended and flushed before the next
is taken, so a killed run can be resumed without loss or duplication.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from palaestra.agents.base import AgentResult, RolloutRunner
from palaestra.collect.files import (
    JsonlAppender,
    Pair,
    RunFiles,
    archive_failures,
    failed_attempts,
    finished_pairs,
    repair_torn_tail,
)
from palaestra.collect.metrics import RunMetrics
from palaestra.collect.rows import dispatch_row, failure_row, input_error_row, rollout_row
from palaestra.collect.tasks import TaskLine, count_tasks, read_tasks
from palaestra.errors import ConfigError, InputError, ModelUnreachable
from palaestra.types import Failure, FailureKind, JsonDict

UNREACHABLE_STOP = 3
"""Consecutive rollouts that found the model unreachable (after retries) before the run stops."""


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


@dataclass(slots=True)
class RunSummary:
    total: int = 0
    skipped: int = 0
    done: int = 0
    reward_sum: float = 0.0
    failures: Counter[str] = field(default_factory=Counter)
    invalid_inputs: int = 0
    stopped_reason: str | None = None
    files: RunFiles | None = None
    aggregate: list[JsonDict] = field(default_factory=list)
    """Per agent: agent and key metrics; the per-task group metrics are in the file only."""

    @property
    def mean_reward(self) -> float | None:
        return self.reward_sum / self.done if self.done else None


class Progress(Protocol):
    """Where the collector reports progress; the CLI shows it, tests may record it."""

    def start(self, summary: RunSummary) -> None: ...
    def update(self, summary: RunSummary) -> None: ...
    def message(self, text: str) -> None: ...
    def stop(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Job:
    task: TaskLine
    rollout_index: int
    attempt: int


async def collect(runner: RolloutRunner, config: CollectConfig, progress: Progress) -> RunSummary:
    """Run every (task, rollout) pair not finished yet; return the run's summary."""
    files = RunFiles(config.output)
    summary = RunSummary(files=files)
    done_pairs, attempts = prepare_files(files, config)
    summary.total = count_tasks(config.input, limit=config.limit) * config.repeats
    summary.skipped = len(done_pairs)
    await runner.check()
    metrics = RunMetrics.read(files.output, files.failures)  # what a resumed run has already
    run = _Run(runner, config, summary, progress, files, metrics)
    progress.start(summary)
    try:
        await run.execute(_jobs(config, done_pairs, attempts, run))
    finally:
        run.close()
        progress.stop()
    summary.aggregate = metrics.write(files.aggregate_metrics)
    return summary


def prepare_files(files: RunFiles, config: CollectConfig) -> tuple[set[Pair], Counter[Pair]]:
    """Check the output is free (or resumable) and return what an earlier run finished."""
    if config.input.resolve() in {p.resolve() for p in files.all()}:
        raise ConfigError(f"--output {config.output} would overwrite the input file")
    exists = config.output.exists() and config.output.stat().st_size > 0
    if exists and not (config.resume or config.overwrite):
        raise ConfigError(
            f"{config.output} already exists: pass --resume to continue that run "
            f"or --overwrite to start over"
        )
    if config.overwrite and not config.resume:
        for path in [*files.all(), files.failure_history]:
            path.unlink(missing_ok=True)
        return set(), Counter()
    repair_torn_tail(files.output)
    repair_torn_tail(files.materialized_inputs)
    done = finished_pairs(files.output)
    archive_failures(files)
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
    ) -> None:
        self.runner, self.config = runner, config
        self.metrics = metrics
        self.summary, self.progress = summary, progress
        self.outputs = JsonlAppender(files.output)
        self.inputs = JsonlAppender(files.materialized_inputs, flush_each=False)
        self.failures = JsonlAppender(files.failures)
        self.unreachable_streak = 0

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
            job = next(jobs, None)
            if job is None:
                return
            await self._run_job(job)

    async def _run_job(self, job: Job) -> None:
        dispatched = dispatch_row(
            job.task.row,
            task_index=job.task.index,
            rollout_index=job.rollout_index,
            agent_ref=self.config.agent_ref,
            overrides=self.config.overrides,
        )
        self.inputs.append(dispatched)
        try:
            result = await self.runner.run(dispatched)
        except ModelUnreachable as error:
            self._record_failure(dispatched, Failure(error.kind, error.reason), None, job)
            self.unreachable_streak += 1
            if self.unreachable_streak >= UNREACHABLE_STOP:
                self.summary.stopped_reason = f"the model is unreachable: {error.reason}"
            return
        except Exception as error:  # a bug in one rollout must not end the run
            reason = f"{type(error).__name__}: {error}"
            self._record_failure(dispatched, Failure(FailureKind.INTERNAL_ERROR, reason), None, job)
            return
        self.unreachable_streak = 0
        self._record_result(dispatched, result, job)

    def _record_result(self, dispatched: JsonDict, result: AgentResult, job: Job) -> None:
        failure = result.failure or (result.verdict.failure if result.verdict else None)
        if failure is not None:
            self._record_failure(dispatched, failure, result, job)
            return
        row = rollout_row(dispatched, result, attempt=job.attempt)
        self.outputs.append(row)
        self.metrics.add_rollout(row)
        self.summary.done += 1
        self.summary.reward_sum += float(row["reward"])
        self.progress.update(self.summary)

    def _record_failure(
        self, dispatched: JsonDict, failure: Failure, result: AgentResult | None, job: Job
    ) -> None:
        row = failure_row(dispatched, failure, result, attempt=job.attempt)
        row["source"] = {"path": str(self.config.input), "line": job.task.line}
        self.failures.append(row)
        self.metrics.add_failure(row)
        self.summary.failures[str(failure.kind)] += 1
        self.progress.update(self.summary)

    def record_input_error(self, error: InputError, task_index: int) -> None:
        row = input_error_row(error, task_index=task_index)
        self.failures.append(row)
        self.metrics.add_failure(row)
        self.summary.invalid_inputs += 1
        self.summary.failures[str(FailureKind.INVALID_INPUT)] += self.config.repeats
        self.progress.message(f"skipped {error.describe()}")
        self.progress.update(self.summary)

    def close(self) -> None:
        for appender in (self.outputs, self.inputs, self.failures):
            appender.close()
