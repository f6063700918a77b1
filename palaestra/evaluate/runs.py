"""Reading a run back: its scored rollouts and its failures, grouped by task.

A run is what ``palaestra collect`` (or NeMo Gym's collector) leaves behind: the output JSONL
(one scored rollout a line) and ``<output>_failures.jsonl`` beside it (one failed rollout a
line, with ``failure: {kind, reason, masked}``). ``load_run`` reads both into a ``Run``: per
task (``_ng_task_index``), its ``Rollout`` s and its ``FailedRollout`` s, with what the
statistics need (reward, verifier metrics, extracted answer) and what a report shows (token
usage, timings, truncation), never the whole trajectory: about 1.1 kB a rollout (110 MB for
100,000 rollouts whose file holds 475 MB), or 0.6 kB with ``details=False``, which leaves out
token usage and timings.

A failure record whose rollout (task, repeat) also has a scored row is left out (it was
retried and scored; ``Run.superseded`` counts them), and two records of one rollout count
once, so every rollout is either scored or failed, never both. A line that is not a JSON
object, a rollout row without ``_ng_task_index`` or with a reward that is not a number, is one
``InputError`` naming the file, the line and the field. The one exception is a torn last line
(no newline, not JSON: a run still writing, or killed mid-write): it is skipped and kept in
``Run.torn``, whose ``Run.warnings`` name the file and line, as ``verify`` and ``view`` do. A
reward of ``null`` (a NaN the verifier returned, as older versions wrote it) is kept as a
failure of kind ``nan_reward``.

The task identity: ``Task.identity`` is a short digest of the task's prompt
(``responses_create_params.input``), so two runs of the same input agree on it whatever their
model, sampling or agent, and ``compare_runs`` can tell when an index names different tasks.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import orjson

from palaestra.collection.aggregate import USAGE_FIELDS
from palaestra.collection.files import RunFiles
from palaestra.environment.estimators import PASS_THRESHOLD
from palaestra.errors import ConfigError, InputError
from palaestra.types import JsonDict
from palaestra.wire.jsonl import NOT_OBJECT, TORN, BadLine, read_rows
from palaestra.wire.rows import (
    AGENT_REF,
    FACTS,
    FAILURE,
    NG_FAILURE_CLASS,
    PARAMS,
    RESPONSE,
    REWARD,
    REWARD_COMPONENTS,
    ROLLOUT_INDEX,
    TASK_INDEX,
)

_NOTHING: Mapping[str, Any] = MappingProxyType({})
"""The usage or timings of a rollout without them: one shared empty mapping."""
NAN_REWARD = "nan_reward"
"""The failure kind of a rollout row whose reward is ``null`` (not a number)."""


@dataclass(frozen=True, slots=True)
class Rollout:
    """A scored rollout, as much of it as statistics and reports use."""

    task: int
    index: int | None
    """``_ng_rollout_index``: which repeat of the task (None when the row has none)."""
    reward: float
    metrics: Mapping[str, float]
    """The verifier's numeric fields besides ``reward`` (booleans as 0/1), and each
    ``reward_components/<name>``: the fields named in ``_palaestra.verifier_fields``, or every
    numeric top-level field of a row without it (NeMo Gym's), as the aggregate file does."""
    answer: str | None = None
    """``extracted_answer`` when the verifier reported one (majority@k votes with it)."""
    usage: Mapping[str, int] = field(default_factory=dict)
    """``input_tokens``, ``output_tokens``, ``total_tokens`` of the response, when known."""
    timings: Mapping[str, float] = field(default_factory=dict)
    """Seconds per phase (``seed``, ``model``, ``tools``, ``verify``, ``total``)."""
    truncated: bool = False
    """The agent ran out of ``max_steps`` before the model finished."""
    agent: str = ""
    """``agent_ref.name``."""

    @property
    def passed(self) -> bool:
        """The aggregate file's notion of a pass: reward >= 1."""
        return self.reward >= PASS_THRESHOLD


@dataclass(frozen=True, slots=True)
class FailedRollout:
    """A rollout without a reward: its kind (``model_error``, ``timeout``, ...) and reason."""

    task: int | None
    index: int | None
    """None for an input line that could not be read (no rollout of it ran)."""
    kind: str
    reason: str
    masked: bool
    """Left out of training (``Failure.masked``); every failure is left out of a mean unless
    ``failures_as_zero`` reads it as reward 0."""
    agent: str = ""


@dataclass(slots=True)
class Task:
    """One task of a run: its scored rollouts (by repeat) and its failed ones."""

    index: int
    identity: str | None = None
    """A digest of the prompt (``responses_create_params.input``); None when no row had one."""
    rollouts: list[Rollout] = field(default_factory=list)
    failures: list[FailedRollout] = field(default_factory=list)

    @property
    def rewards(self) -> list[float]:
        return [rollout.reward for rollout in self.rollouts]

    @property
    def passed(self) -> int:
        """Scored rollouts that passed (reward >= 1)."""
        return sum(rollout.reward >= PASS_THRESHOLD for rollout in self.rollouts)

    @property
    def attempted(self) -> int:
        """Scored plus failed rollouts."""
        return len(self.rollouts) + len(self.failures)


@dataclass(slots=True)
class Run:
    """A run read back by ``load_run``: tasks by index, and the counts around them."""

    output: Path
    failures_file: Path
    tasks: dict[int, Task] = field(default_factory=dict)
    """By ``_ng_task_index``, in index order."""
    unplaced: list[FailedRollout] = field(default_factory=list)
    """Failures without a task index (NeMo Gym failure rows may lack one)."""
    superseded: int = 0
    """Failure records left out: their rollout was scored after all, or recorded twice."""
    torn: list[BadLine] = field(default_factory=list)
    """Torn last lines skipped (no newline, not JSON): at most one per file read."""

    @property
    def warnings(self) -> list[str]:
        """One line per torn last line skipped, naming its file and line."""
        return [
            f"{line.path}:{line.line}: the last line is incomplete (a run still writing, or "
            "killed mid-write) and was skipped"
            for line in self.torn
        ]

    def rollouts(self) -> Iterator[Rollout]:
        for task in self.tasks.values():
            yield from task.rollouts

    def failures(self) -> Iterator[FailedRollout]:
        for task in self.tasks.values():
            yield from task.failures
        yield from self.unplaced

    @property
    def scored(self) -> int:
        return sum(len(task.rollouts) for task in self.tasks.values())

    @property
    def failed(self) -> int:
        return sum(len(task.failures) for task in self.tasks.values()) + len(self.unplaced)

    @property
    def masked(self) -> int:
        """Failures marked ``masked`` (left out of training)."""
        return sum(failure.masked for failure in self.failures())

    def failure_kinds(self) -> Counter[str]:
        return Counter(failure.kind for failure in self.failures())

    def agents(self) -> list[str]:
        """The ``agent_ref`` names in the run (one for a ``palaestra collect`` run)."""
        names = {rollout.agent for rollout in self.rollouts()}
        names.update(failure.agent for failure in self.failures())
        return sorted(names)

    def only(self, agent: str) -> Run:
        """The part of the run that ``agent`` ran (NeMo Gym files may hold several agents)."""
        tasks: dict[int, Task] = {}
        for index, task in self.tasks.items():
            rollouts = [r for r in task.rollouts if r.agent == agent]
            failures = [f for f in task.failures if f.agent == agent]
            if rollouts or failures:
                tasks[index] = replace(task, rollouts=rollouts, failures=failures)
        unplaced = [f for f in self.unplaced if f.agent == agent]
        return Run(self.output, self.failures_file, tasks, unplaced, self.superseded, self.torn)


def combine_runs(runs: Sequence[Run]) -> Run:
    """One run of every task of ``runs`` (several environments' runs, say), for overall figures.

    Task indices restart in each run, so the tasks are numbered anew, run after run (the
    first run's tasks keep theirs); each ``Task.rollouts`` keeps its rollouts as they were.
    The result's ``output`` is the first run's. Figures of the result weigh every task the
    same, whichever run it came from.
    """
    if not runs:
        raise ValueError("combine_runs needs at least one run")
    tasks: dict[int, Task] = {}
    for run in runs:
        for task in run.tasks.values():
            number = len(tasks)
            tasks[number] = replace(task, index=number)
    unplaced = [failure for run in runs for failure in run.unplaced]
    superseded = sum(run.superseded for run in runs)
    torn = [line for run in runs for line in run.torn]
    return Run(runs[0].output, runs[0].failures_file, tasks, unplaced, superseded, torn)


def load_run(
    output: str | os.PathLike[str],
    *,
    failures: str | os.PathLike[str] | None = None,
    details: bool = True,
) -> Run:
    """Read a run: ``output`` (rollouts JSONL) and its failures file (default: beside it).

    ``details=False`` leaves each rollout's ``usage`` and ``timings`` empty (the figures do
    not use them): 0.6 kB a rollout instead of 1.1.

    A missing ``output`` is a ``ConfigError``; a missing failures file means no failures. A
    bad line is an ``InputError`` naming the file, the line and the field, except a torn last
    line (a run in progress or killed mid-write), which is skipped and kept in ``Run.torn``.
    """
    path = Path(output)
    if not path.is_file():
        raise ConfigError(f"no run at {path}: not a file (pass the rollouts JSONL)")
    failures_path = Path(failures) if failures is not None else RunFiles(path).failures
    tasks: dict[int, Task] = {}
    scored: set[tuple[int, int]] = set()
    nan_rewards: list[FailedRollout] = []
    torn: list[BadLine] = []
    for line, row in _rows(path, torn):
        rollout = _rollout(row, path, line, details)
        number = rollout.task
        assert number is not None  # _rollout requires it
        task = tasks.get(number)
        if task is None:
            task = tasks[number] = Task(number, _identity(row))
        elif task.identity is None:
            task.identity = _identity(row)
        if isinstance(rollout, FailedRollout):
            nan_rewards.append(rollout)
            continue
        task.rollouts.append(rollout)
        if rollout.index is not None:
            scored.add((rollout.task, rollout.index))
    run = Run(path, failures_path, torn=torn)
    failed: dict[tuple[int, int], FailedRollout] = {}
    loose: list[FailedRollout] = list(nan_rewards)
    if failures_path.is_file():
        for line, row in _rows(failures_path, torn):
            failure = _failure(row, failures_path, line)
            if failure.task is not None and failure.task not in tasks:
                tasks[failure.task] = Task(failure.task, _identity(row))
            if failure.task is None or failure.index is None:
                loose.append(failure)
                continue
            pair = (failure.task, failure.index)
            if pair in scored or pair in failed:
                run.superseded += 1
            failed.pop(pair, None)
            if pair not in scored:
                failed[pair] = failure  # the later record of a rollout recorded twice wins
    for failure in [*failed.values(), *loose]:
        if failure.task is None:
            run.unplaced.append(failure)
        else:
            tasks[failure.task].failures.append(failure)
    for task in tasks.values():
        task.rollouts.sort(key=_by_repeat)
        task.failures.sort(key=_by_repeat)
    run.tasks = dict(sorted(tasks.items()))
    return run


def _by_repeat(item: Rollout | FailedRollout) -> int:
    return -1 if item.index is None else item.index


def _rows(path: Path, torn: list[BadLine]) -> Iterator[tuple[int, JsonDict]]:
    """The rows of ``path``; a torn last line goes to ``torn``, any other bad line raises."""
    for number, row in read_rows(path):
        if not isinstance(row, BadLine):
            yield number, row
        elif row.problem == TORN:  # the last line by definition: a writer still at it, or killed
            torn.append(row)
        elif row.problem == NOT_OBJECT:
            raise row.error("not a JSON object")
        else:
            raise row.error(f"not JSON: {row.detail}")


def _identity(row: JsonDict) -> str | None:
    params = row.get(PARAMS)
    if not isinstance(params, dict) or "input" not in params:
        return None
    prompt = orjson.dumps(params["input"], option=orjson.OPT_SORT_KEYS)
    return hashlib.blake2b(prompt, digest_size=8).hexdigest()


def _index(row: JsonDict, name: str, path: Path, line: int, *, required: bool) -> int | None:
    value = row.get(name)
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        reason = "missing" if value is None else f"not an integer: {value!r}"
        raise InputError(reason, path=str(path), line=line, field=name)
    return value


def _agent(row: JsonDict) -> str:
    ref = row.get(AGENT_REF)
    name = ref.get("name") if isinstance(ref, dict) else None
    return name if isinstance(name, str) else ""


def _rollout(row: JsonDict, path: Path, line: int, details: bool) -> Rollout | FailedRollout:
    task = _index(row, TASK_INDEX, path, line, required=True)
    assert task is not None
    index = _index(row, ROLLOUT_INDEX, path, line, required=False)
    reward = row.get(REWARD)
    agent = _agent(row)
    if reward is None and REWARD in row:
        reason = "the verifier returned a reward that is not a number (NaN)"
        return FailedRollout(task, index, NAN_REWARD, reason, True, agent)
    if isinstance(reward, bool) or not isinstance(reward, int | float):
        reason = "missing" if reward is None else f"not a number: {reward!r}"
        raise InputError(reason, path=str(path), line=line, field=REWARD)
    if not math.isfinite(reward):
        reason = f"the verifier returned a reward that is not finite ({reward})"
        return FailedRollout(task, index, NAN_REWARD, reason, True, agent)
    facts = row.get(FACTS)
    facts = facts if isinstance(facts, dict) else {}
    answer = row.get("extracted_answer")
    response = row.get(RESPONSE)
    usage = response.get("usage") if isinstance(response, dict) and details else None
    timings = facts.get("timings") if details else None
    return Rollout(
        task=task,
        index=index,
        reward=float(reward),
        metrics=_metrics(row, facts),
        answer=answer.strip() if isinstance(answer, str) and answer.strip() else None,
        usage={k: usage[k] for k in USAGE_FIELDS if isinstance(usage.get(k), int)}
        if isinstance(usage, dict)
        else _NOTHING,
        timings={k: float(v) for k, v in timings.items() if isinstance(v, int | float)}
        if isinstance(timings, dict)
        else _NOTHING,
        truncated=bool(facts.get("truncated")),
        agent=agent,
    )


def _metrics(row: JsonDict, facts: JsonDict) -> dict[str, float]:
    names = facts.get("verifier_fields")
    if isinstance(names, list):
        keys = [name for name in names if isinstance(name, str)]
    else:
        keys = [key for key in row if not key.startswith("_")]
    metrics: dict[str, float] = {}
    for key in keys:
        if key == REWARD:
            continue
        value = row.get(key)
        if key == REWARD_COMPONENTS and isinstance(value, dict):
            for name, part in value.items():
                _put(metrics, f"{key}/{name}", part)
        else:
            _put(metrics, key, value)
    return metrics


def _put(metrics: dict[str, float], key: str, value: object) -> None:
    if isinstance(value, bool | int | float) and math.isfinite(value):
        metrics[key] = float(value)


def _failure(row: JsonDict, path: Path, line: int) -> FailedRollout:
    task = _index(row, TASK_INDEX, path, line, required=False)
    index = _index(row, ROLLOUT_INDEX, path, line, required=False)
    record = row.get(FAILURE)
    if isinstance(record, dict):
        kind, reason = record.get("kind"), record.get("reason", "")
        masked = record.get("masked", True)
    else:  # NeMo Gym's form: only the class
        kind, reason, masked = row.get(NG_FAILURE_CLASS), "", True
    if not isinstance(kind, str) or not kind:
        raise InputError(
            "a failure row needs failure.kind (or _ng_failure_class)",
            path=str(path),
            line=line,
            field=FAILURE,
        )
    return FailedRollout(task, index, kind, str(reason), bool(masked), _agent(row))
