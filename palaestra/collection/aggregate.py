"""Aggregate metrics of a run, fed one row at a time as the collector writes it.

The collector adds each row it appends (and, on resume, reads back the rows already there), so
the aggregate always describes exactly the output file, without reading it again at the end.

The names are NeMo Gym's (its ``RewardProfiler``): per agent, ``mean/``, ``max/``, ``min/``,
``median/`` and ``std/`` (the sample standard deviation, 0 for one value) of every numeric
field the verifier returned (reward, ``reward_components/<name>``, verifier metrics; booleans
count as 0/1; a NaN, which the file holds as ``null``, is left out) and of the token usage
(``mean/input_tokens``, ``mean/output_tokens``, ``mean/total_tokens``). ``key_metrics`` holds
every ``mean/`` entry, as NeMo Gym's default does, and palaestra's counts: rollouts, tasks,
failures, truncated (rollouts verified as they stood when they ran out of ``max_steps``, of
``max_user_turns`` or of the model's context) and ``truncated/<why>`` per cause, ``pass@k``
(unbiased estimator, a rollout passes when its reward >= 1; k = 1 and k = the repeats of each
task) and ``majority@k``. palaestra's rows name the verifier's fields in
``_palaestra.verifier_fields``, so a task's own numeric fields (an ``id``) are not averaged;
rows without it (NeMo Gym's) count every numeric top-level field, as NeMo Gym does. Failures
are counted by kind, never averaged. Per task, ``group_level_metrics`` has ``num_rollouts``
and ``mean/reward``.

Memory does not grow with the rollouts and barely with the tasks: per task, three counters in
arrays (16 bytes), and the per-task group metrics are streamed into the file, never held. A
median counts each distinct value once; past 65,536 distinct values of one metric (continuous
scores over a huge run) the values are rounded to 10 bits of mantissa, so the median is then
within 0.1% of the exact one.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from palaestra.environment.estimators import PASS_THRESHOLD, majority_vote
from palaestra.environment.estimators import pass_at_k as task_pass_at_k
from palaestra.types import JsonDict
from palaestra.wire.jsonl import read_objects
from palaestra.wire.protocol import failure_from_fields, is_failure_row
from palaestra.wire.rows import (
    AGENT_REF,
    FACTS,
    FAILURE,
    RESPONSE,
    REWARD,
    REWARD_COMPONENTS,
    ROLLOUT_INDEX,
    TASK_INDEX,
    AgentRef,
    AggregateEntry,
    GroupMetrics,
)

STATS = ("mean", "max", "min", "median", "std")
"""NeMo Gym's statistics of a metric, in its order: ``mean/reward``, ``median/input_tokens``."""
USAGE_FIELDS = ("input_tokens", "output_tokens", "total_tokens")
"""Token counts of a row's ``response.usage``, aggregated under their own names (NeMo Gym's)."""
_DISTINCT = 1 << 16
"""Distinct values a median keeps exactly (see the module docstring)."""


@dataclass(slots=True)
class RunningStat:
    count: int = 0
    mean: float = 0.0
    m2: float = 0.0
    low: float = math.inf
    high: float = -math.inf
    counts: dict[float, int] = field(default_factory=dict)
    """How often each value was seen (rounded to ``bits`` of mantissa once there are many)."""
    bits: int = 0

    def add(self, value: float) -> None:
        # Spelled out for speed (five calls per row): cheaper than with min and max.
        self.count = count = self.count + 1
        delta = value - self.mean
        self.mean = mean = self.mean + delta / count
        self.m2 += delta * (value - mean)
        if value < self.low:
            self.low = value
        if value > self.high:
            self.high = value
        counts = self.counts
        if self.bits:
            value = _rounded(value, self.bits)
        counts[value] = counts.get(value, 0) + 1
        if len(counts) > _DISTINCT:
            self._coarsen()

    @property
    def std(self) -> float:
        """The sample standard deviation (pandas' and NeMo Gym's); 0 for a single value."""
        return math.sqrt(self.m2 / (self.count - 1)) if self.count > 1 else 0.0

    @property
    def median(self) -> float:
        """The middle value, or the mean of the two middle ones (pandas' median)."""
        if not self.counts:
            return math.nan
        below = (self.count - 1) // 2  # values before the lower middle one
        lower: float | None = None
        seen = 0
        for value in sorted(self.counts):
            seen += self.counts[value]
            if lower is None and seen > below:
                lower = value
            if seen > self.count // 2:  # the upper middle one (the same for an odd count)
                return (lower + value) / 2 if lower is not None else value
        return math.nan  # unreachable: the counts add up to count

    def _coarsen(self) -> None:
        while len(self.counts) > _DISTINCT:
            self.bits = 10 if not self.bits else max(self.bits - 2, 1)
            coarse: dict[float, int] = {}
            for value, times in self.counts.items():
                key = _rounded(value, self.bits)
                coarse[key] = coarse.get(key, 0) + times
            self.counts = coarse

    def values(self) -> dict[str, float]:
        return {
            "mean": self.mean,
            "max": self.high,
            "min": self.low,
            "median": self.median,
            "std": self.std,
        }


def _rounded(value: float, bits: int) -> float:
    mantissa, exponent = math.frexp(value)
    return math.ldexp(round(mantissa * (1 << bits)) / (1 << bits), exponent)


_DENSE_SLACK = 1 << 16
"""How far beyond the dense per-task arrays a task index may land and still go there."""


class TaskTable:
    """Per task: rollouts, rollouts passed and the sum of rewards, in compact arrays.

    A collector's task indices are the input's line numbers, so the counters live in arrays
    indexed by task (16 bytes a task, instead of a list of floats per task); an index far
    beyond them (or negative) goes to a small dict instead.
    """

    __slots__ = ("_counts", "_passed", "_sparse", "_sums")

    def __init__(self) -> None:
        self._counts = array("I")
        self._passed = array("I")
        self._sums = array("d")
        self._sparse: dict[int, list[float]] = {}  # task -> [rollouts, passed, reward sum]

    def add(self, task: int, reward: float) -> None:
        passed = int(reward >= PASS_THRESHOLD)
        spot = self._sparse.get(task)
        if spot is not None:
            spot[0] += 1
            spot[1] += passed
            spot[2] += reward
            return
        size = len(self._counts)
        if not 0 <= task < size + _DENSE_SLACK:
            self._sparse[task] = [1, passed, reward]
            return
        if task >= size:
            grow = max(task + 1 - size, size >> 3, 1024)
            self._counts.frombytes(bytes(4 * grow))
            self._passed.frombytes(bytes(4 * grow))
            self._sums.frombytes(bytes(8 * grow))
        self._counts[task] += 1
        self._passed[task] += passed
        self._sums[task] += reward

    def __iter__(self) -> Iterator[tuple[int, int, int, float]]:
        """(task, rollouts, passed, reward sum) of every task seen, by task index."""
        dense = (
            (task, count, passed, total)
            for task, (count, passed, total) in enumerate(
                zip(self._counts, self._passed, self._sums, strict=True)
            )
            if count
        )
        sparse = (
            (task, int(spot[0]), int(spot[1]), spot[2])
            for task, spot in sorted(self._sparse.items())
        )
        return heapq.merge(dense, sparse)


@dataclass(slots=True)
class AgentAggregate:
    agent_ref: AgentRef
    stats: dict[str, RunningStat] = field(default_factory=lambda: defaultdict(RunningStat))
    tasks: TaskTable = field(default_factory=TaskTable)
    answers_by_task: dict[int, list[tuple[str, float]]] = field(
        default_factory=lambda: defaultdict(list)
    )

    truncated: int = 0
    truncated_by: Counter[str] = field(default_factory=Counter)

    def add(self, row: Mapping[str, Any]) -> None:
        reward = row.get(REWARD, 0.0)
        if not isinstance(reward, int | float) or not math.isfinite(reward):
            return  # not a score (older versions wrote a NaN reward, as null)
        facts = row.get(FACTS)
        facts = facts if isinstance(facts, dict) else {}
        names = facts.get("verifier_fields")
        if isinstance(names, list):
            for key in names:
                self._add_value(key, row.get(key))
        else:
            for key, value in row.items():
                if not key.startswith("_"):
                    self._add_value(key, value)
        why = facts.get("truncated")
        if why:
            self.truncated += 1
            self.truncated_by[str(why)] += 1
        usage = (row.get(RESPONSE) or {}).get("usage") or {}
        for key in USAGE_FIELDS:
            if isinstance(usage.get(key), int):
                self.stats[key].add(float(usage[key]))
        task = int(row[TASK_INDEX])
        self.tasks.add(task, float(reward))
        answer = row.get("extracted_answer")
        if isinstance(answer, str) and answer.strip():
            self.answers_by_task[task].append((answer.strip(), float(reward)))

    def _add_value(self, key: str, value: object) -> None:
        # A float first: the type test is cheaper than isinstance against a union type.
        if type(value) is float or isinstance(value, bool | int | float):
            if math.isfinite(value):
                self.stats[key].add(float(value))
        elif key == REWARD_COMPONENTS and isinstance(value, dict):
            for name, part in value.items():
                self._add_value(f"{key}/{name}", part)

    def summary(self) -> AggregateEntry:
        """Agent and key metrics, without the per-task ``group_level_metrics``."""
        ordered = sorted(self.stats.items())
        values = [(key, stat.values()) for key, stat in ordered]
        agent_metrics = {f"{s}/{key}": of[s] for s in STATS for key, of in values}
        rollouts = tasks = 0
        smallest: int | None = None
        for _, count, _, _ in self.tasks:
            rollouts += count
            tasks += 1
            smallest = count if smallest is None else min(smallest, count)
        key_metrics: dict[str, float] = {
            name: value for name, value in agent_metrics.items() if name.startswith("mean/")
        }
        key_metrics.update(rollouts=rollouts, tasks=tasks)
        if self.truncated:
            key_metrics["truncated"] = self.truncated
            for why, count in sorted(self.truncated_by.items()):
                key_metrics[f"truncated/{why}"] = count
        if smallest is not None:
            for k in sorted({1, smallest}):
                passing = sum(task_pass_at_k(n, c, k) for _, n, c, _ in self.tasks)
                key_metrics[f"pass@{k}"] = passing / tasks
            if self.answers_by_task:
                key_metrics[f"majority@{smallest}"] = _majority_wins(self.answers_by_task) / tasks
        return {
            AGENT_REF: self.agent_ref,
            "agent_metrics": agent_metrics,
            "key_metrics": key_metrics,
        }

    def groups(self) -> Iterator[GroupMetrics]:
        """The per-task ``group_level_metrics``, one at a time, by task index."""
        for task, count, _, total in self.tasks:
            yield {TASK_INDEX: task, "num_rollouts": count, "mean/reward": total / count}

    def to_json(self) -> AggregateEntry:
        entry = self.summary()
        entry["group_level_metrics"] = list(self.groups())
        return entry


def majority_at_k(
    rewards_by_task: dict[int, list[float]], answers_by_task: dict[int, list[tuple[str, float]]]
) -> JsonDict:
    """Share of tasks whose most frequent ``extracted_answer`` (exact text) was scored correct.

    Only where verifiers report ``extracted_answer``; rollouts without an answer do not vote.
    Environments with semantic equivalence (math) offer their own, finer majority@k.
    """
    if not answers_by_task:
        return {}
    k = min(len(r) for r in rewards_by_task.values())
    votes = {task: answers_by_task[task] for task in rewards_by_task if task in answers_by_task}
    return {f"majority@{k}": _majority_wins(votes) / len(rewards_by_task)}


def _majority_wins(answers_by_task: dict[int, list[tuple[str, float]]]) -> int:
    """Tasks whose most frequent answer was scored correct at least once."""
    return sum(
        majority_vote([(answer, reward >= PASS_THRESHOLD) for answer, reward in votes])
        for votes in answers_by_task.values()
    )


class RunMetrics:
    """The aggregate of a run's rows and failures, per ``agent_ref``, fed as they are written."""

    def __init__(self) -> None:
        self.agents: dict[bytes, AgentAggregate] = {}
        self.failure_kinds: Counter[str] = Counter()
        self.failed_by_task: Counter[int] = Counter()
        """Failed rollouts per task (those with a task and rollout index): the end-of-run
        figures read them as 0 with ``--failures-as-zero``. Only failed tasks take room."""
        self.masked = 0
        self._rows = 0

    @classmethod
    def read(cls, output: Path, failures: Path) -> RunMetrics:
        """The aggregate of what the files hold already (nothing when they do not exist)."""
        metrics = cls()
        if output.exists():
            for _, row in read_objects(output):
                metrics.add_rollout(row)
        metrics.read_failures(failures)
        return metrics

    def read_failures(self, failures: Path) -> None:
        """Count the failure records ``failures`` holds (nothing when it does not exist)."""
        if failures.exists():
            for _, row in read_objects(failures):
                self.add_failure(row)

    def add_rollout(self, row: Mapping[str, Any]) -> None:
        """Count one rollout row; a row without ``_ng_task_index`` is its own task.

        (NeMo Gym's ``/aggregate_metrics`` may send rows without one.)
        """
        if TASK_INDEX not in row:
            row = {**row, TASK_INDEX: self._rows}
        self._rows += 1
        ref: AgentRef = row.get(AGENT_REF) or AgentRef()
        key = orjson.dumps(ref, option=orjson.OPT_SORT_KEYS)
        agent = self.agents.get(key)
        if agent is None:
            agent = self.agents[key] = AgentAggregate(ref)
        agent.add(row)

    def add_failure(self, row: Mapping[str, Any]) -> None:
        failure = row[FAILURE]
        self.failure_kinds[failure["kind"]] += 1
        if failure.get("masked", True):
            self.masked += 1
        task = row.get(TASK_INDEX)
        if type(task) is int and row.get(ROLLOUT_INDEX) is not None:
            self.failed_by_task[task] += 1

    def task_counts(self) -> Iterator[tuple[int, int, int, float]]:
        """(task, scored rollouts, passed, reward sum) of every scored task, by task index,
        over every agent (a task two agents ran counts once, their rollouts together)."""
        tables = [agent.tasks for agent in self.agents.values()]
        if len(tables) == 1:
            yield from tables[0]
            return
        merged: dict[int, list[float]] = {}
        for task, count, passed, total in heapq.merge(*tables):
            spot = merged.setdefault(task, [0, 0, 0.0])
            spot[0] += count
            spot[1] += passed
            spot[2] += total
        for task, (rollouts, passes, reward_sum) in sorted(merged.items()):
            yield task, int(rollouts), int(passes), reward_sum

    def scored(self) -> tuple[int, float]:
        """(rollouts, sum of their rewards) over every agent: the file's mean reward."""
        count, total = 0, 0.0
        for agent in self.agents.values():
            for _, rollouts, _, reward_sum in agent.tasks:
                count += rollouts
                total += reward_sum
        return count, total

    @property
    def truncated(self) -> int:
        return sum(agent.truncated for agent in self.agents.values())

    def entries(self) -> Iterator[tuple[AggregateEntry, Iterator[GroupMetrics]]]:
        """Per agent: its summary (with the failures by kind) and its per-task groups."""
        failure_kinds = self.failure_kinds
        for agent in self.agents.values():
            entry = agent.summary()
            entry["key_metrics"]["failures"] = sum(failure_kinds.values())
            entry["failures_by_kind"] = dict(failure_kinds)
            yield entry, agent.groups()
        if not self.agents and failure_kinds:
            empty: AggregateEntry = {
                AGENT_REF: {},
                "agent_metrics": {},
                "key_metrics": {"rollouts": 0, "failures": sum(failure_kinds.values())},
                "failures_by_kind": dict(failure_kinds),
            }
            yield empty, iter(())

    def write(self, path: Path, *, endpoints: list[JsonDict] | None = None) -> list[AggregateEntry]:
        """Write the aggregate to ``path`` as JSON, streaming the per-task groups.

        Returns the entries without their ``group_level_metrics`` (they are in the file), so
        a run of a million tasks never holds a million group dicts, nor their JSON text.
        ``endpoints`` (a model pool's per-endpoint counts of this invocation) go in each
        agent's entry as ``model_endpoints``: the file stays NeMo Gym's list of agent entries,
        whose reader (``AggregateMetrics``) ignores keys it does not know.
        """
        entries = []
        with path.open("wb") as out:
            out.write(b"[")
            for number, (entry, groups) in enumerate(self.entries()):
                shown = {**entry, "model_endpoints": endpoints} if endpoints else entry
                head = orjson.dumps(shown, option=orjson.OPT_INDENT_2)  # "{\n  ...\n}"
                out.write(b",\n" if number else b"\n")
                out.write(head[:-2] + b',\n  "group_level_metrics": [')
                for position, group in enumerate(groups):
                    out.write(b",\n    " if position else b"\n    ")
                    out.write(orjson.dumps(group))
                out.write(b"\n  ]\n}")
                entries.append(entry)
            out.write(b"\n]\n")
        return entries


def aggregate_rows(rows: Iterable[JsonDict]) -> dict[bytes, AgentAggregate]:
    """Aggregates of rollout rows, one per ``agent_ref`` (see ``RunMetrics.add_rollout``)."""
    metrics = RunMetrics()
    for row in rows:
        metrics.add_rollout(row)
    return metrics.agents


def aggregate(output: Path, failures: Path) -> list[AggregateEntry]:
    """Aggregate metrics per agent over ``output``; failures counted by kind beside them."""
    entries = []
    for entry, groups in RunMetrics.read(output, failures).entries():
        entry["group_level_metrics"] = list(groups)
        entries.append(entry)
    return entries


def write_aggregate(output: Path, failures: Path, path: Path) -> list[AggregateEntry]:
    """Write ``aggregate(output, failures)`` to ``path``; see ``RunMetrics.write``."""
    return RunMetrics.read(output, failures).write(path)


def verify_answer_metrics(answers: list[JsonDict]) -> JsonDict:
    """NeMo Gym's ``/aggregate_metrics`` answer over a list of verify answers.

    One group over every answer, whatever agent produced it, as NeMo Gym's endpoint does.
    NeMo Gym's collector sends its failed rollouts too: they are counted by kind, never
    averaged.
    """
    scored = [{**row, AGENT_REF: {}} for row in answers if not is_failure_row(row)]
    failures = [failure_from_fields(row) for row in answers if is_failure_row(row)]
    aggregates = list(aggregate_rows(scored).values())
    metrics: JsonDict = {"agent_metrics": {}, "key_metrics": {}, "group_level_metrics": []}
    if aggregates:  # NeMo Gym's AggregateMetrics: the entry without its agent_ref
        entry = aggregates[0].to_json()
        metrics["agent_metrics"] = entry["agent_metrics"]
        metrics["key_metrics"] = entry["key_metrics"]
        metrics["group_level_metrics"] = entry.get("group_level_metrics", [])
    if failures:
        metrics["key_metrics"]["failures"] = len(failures)
        kinds: dict[str, int] = {}
        for failure in failures:
            kind = str(failure.kind) if failure is not None else "internal_error"
            kinds[kind] = kinds.get(kind, 0) + 1
        metrics["failures_by_kind"] = kinds
    return metrics
