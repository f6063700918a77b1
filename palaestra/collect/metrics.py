"""Aggregate metrics of a finished run, computed by streaming the output file once.

Per agent: ``mean/``, ``std/``, ``min/``, ``max/`` of every numeric top-level field of the
rollout rows (reward and verifier metrics; booleans count as 0/1) and of the token usage;
``pass@k`` (unbiased estimator, a rollout passes when its reward >= 1) for k = 1 and k = the
repeats of each task; and per-task group metrics. Failures are counted by kind, never averaged.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from palaestra.types import JsonDict

PASS_THRESHOLD = 1.0


@dataclass(slots=True)
class RunningStat:
    count: int = 0
    mean: float = 0.0
    m2: float = 0.0
    low: float = math.inf
    high: float = -math.inf

    def add(self, value: float) -> None:
        self.count += 1
        delta = value - self.mean
        self.mean += delta / self.count
        self.m2 += delta * (value - self.mean)
        self.low = min(self.low, value)
        self.high = max(self.high, value)

    @property
    def std(self) -> float:
        return math.sqrt(self.m2 / self.count) if self.count > 1 else 0.0


@dataclass(slots=True)
class AgentAggregate:
    agent_ref: JsonDict
    stats: dict[str, RunningStat] = field(default_factory=lambda: defaultdict(RunningStat))
    rewards_by_task: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    answers_by_task: dict[int, list[tuple[str, float]]] = field(
        default_factory=lambda: defaultdict(list)
    )

    def add(self, row: JsonDict) -> None:
        for key, value in row.items():
            if key.startswith("_") or isinstance(value, str):
                continue
            if isinstance(value, bool | int | float):
                self.stats[key].add(float(value))
        usage = (row.get("response") or {}).get("usage") or {}
        for key in ("input_tokens", "output_tokens", "total_tokens"):
            if isinstance(usage.get(key), int):
                self.stats[f"usage/{key}"].add(float(usage[key]))
        task = int(row["_ng_task_index"])
        self.rewards_by_task[task].append(float(row.get("reward", 0.0)))
        answer = row.get("extracted_answer")
        if isinstance(answer, str) and answer.strip():
            self.answers_by_task[task].append((answer.strip(), float(row.get("reward", 0.0))))

    def to_json(self) -> JsonDict:
        agent_metrics: JsonDict = {}
        for key, stat in sorted(self.stats.items()):
            agent_metrics[f"mean/{key}"] = stat.mean
            agent_metrics[f"std/{key}"] = stat.std
            agent_metrics[f"min/{key}"] = stat.low
            agent_metrics[f"max/{key}"] = stat.high
        key_metrics: JsonDict = {
            "rollouts": sum(len(r) for r in self.rewards_by_task.values()),
            "tasks": len(self.rewards_by_task),
        }
        if "reward" in self.stats:
            key_metrics["mean/reward"] = self.stats["reward"].mean
        key_metrics.update(pass_at_k(self.rewards_by_task))
        key_metrics.update(majority_at_k(self.rewards_by_task, self.answers_by_task))
        groups = [
            {
                "_ng_task_index": task,
                "rollouts": len(rewards),
                "mean/reward": sum(rewards) / len(rewards),
            }
            for task, rewards in sorted(self.rewards_by_task.items())
        ]
        return {
            "agent_ref": self.agent_ref,
            "agent_metrics": agent_metrics,
            "key_metrics": key_metrics,
            "group_level_metrics": groups,
        }


def pass_at_k(rewards_by_task: dict[int, list[float]]) -> JsonDict:
    """Mean unbiased pass@k over tasks, for k = 1 and k = the smallest repeat count."""
    if not rewards_by_task:
        return {}
    smallest = min(len(r) for r in rewards_by_task.values())
    metrics: JsonDict = {}
    for k in sorted({1, smallest}):
        per_task = [
            _unbiased_pass(len(r), sum(x >= PASS_THRESHOLD for x in r), k)
            for r in rewards_by_task.values()
        ]
        metrics[f"pass@{k}"] = sum(per_task) / len(per_task)
    return metrics


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
    wins = 0
    for task in rewards_by_task:
        votes = answers_by_task.get(task, [])
        if votes:
            winner = Counter(answer for answer, _ in votes).most_common(1)[0][0]
            wins += any(a == winner and r >= PASS_THRESHOLD for a, r in votes)
    return {f"majority@{k}": wins / len(rewards_by_task)}


def _unbiased_pass(n: int, correct: int, k: int) -> float:
    if n - correct < k:
        return 1.0
    return 1.0 - math.comb(n - correct, k) / math.comb(n, k)


def aggregate_rows(rows: Iterable[JsonDict]) -> dict[bytes, AgentAggregate]:
    """Aggregates of rollout rows, one per ``agent_ref``.

    A row without ``_ng_task_index`` (as NeMo Gym's ``/aggregate_metrics`` may send) is its
    own task.
    """
    agents: dict[bytes, AgentAggregate] = {}
    for position, row in enumerate(rows):
        if "_ng_task_index" not in row:
            row = {**row, "_ng_task_index": position}
        ref = row.get("agent_ref") or {}
        key = orjson.dumps(ref, option=orjson.OPT_SORT_KEYS)
        agents.setdefault(key, AgentAggregate(ref)).add(row)
    return agents


def _jsonl_rows(path: Path) -> Iterator[JsonDict]:
    if path.exists():
        with path.open("rb") as lines:
            for raw in lines:
                if raw.strip():
                    yield orjson.loads(raw)


def aggregate(output: Path, failures: Path) -> list[JsonDict]:
    """Aggregate metrics per agent over ``output``; failures counted by kind beside them."""
    agents = aggregate_rows(_jsonl_rows(output))
    failure_kinds = Counter(row["failure"]["kind"] for row in _jsonl_rows(failures))
    result = [agent.to_json() for agent in agents.values()]
    for entry in result:
        entry["key_metrics"]["failures"] = sum(failure_kinds.values())
        entry["failures_by_kind"] = dict(failure_kinds)
    if not result and failure_kinds:
        result.append(
            {
                "agent_ref": {},
                "agent_metrics": {},
                "group_level_metrics": [],
                "key_metrics": {"rollouts": 0, "failures": sum(failure_kinds.values())},
                "failures_by_kind": dict(failure_kinds),
            }
        )
    return result
