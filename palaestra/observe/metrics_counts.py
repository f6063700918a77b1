"""Rollout counters kept in plain Python, cheap enough for the hot path.

``RolloutCounts`` is the collector's observer (``CollectConfig.observer``) and the agent
server's: started, finished and failed rollouts, a histogram of each phase's seconds and the
reward so far. Nothing here imports ``prometheus_client`` or takes a lock: the families are
built from these numbers only when someone scrapes (``palaestra.observe.metrics``).

Why not ``prometheus_client.Histogram.observe`` per phase: it takes a lock and walks its
buckets in Python, five calls a rollout; a ``bisect`` into a list here is several times cheaper
(benchmarks/results/micro.md; benchmarks/metrics.py measures the whole observer against a run
without it).

A scrape may run in another thread (``palaestra collect --metrics-port`` serves from one):
it copies the lists and dicts first, so at worst it sees a rollout counted as finished whose
phases are not in the histogram yet. Each number is exact; a scrape is not a transaction.
"""

from __future__ import annotations

import asyncio
from bisect import bisect_left
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from palaestra.agents.base import BoundAgent, takes_context
from palaestra.agents.context import NO_CONTEXT, RolloutContext
from palaestra.environment.running.client import LocalEnvironmentClient
from palaestra.types import FailureKind, JsonDict

if TYPE_CHECKING:
    from palaestra.agents.base import Agent
    from palaestra.environment.running.client import EnvironmentClient
    from palaestra.models.base import Model
    from palaestra.types import AgentResult

PHASES = ("seed", "model", "tools", "verify", "total")
"""The phases every agent times (``AgentResult.timings``); others are counted as they come."""

BUCKETS = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
)  # fmt: skip
"""Upper bounds (seconds) of the phase histograms: a trivial in-process tool call is well
under a millisecond, a long agentic rollout many minutes."""

_INVALID_INPUT = str(FailureKind.INVALID_INPUT)

VERSION_BUCKETS = (0, 1, 2, 4, 8, 16, 32, 64)
"""Upper bounds of the policy-version histograms (span, age): 0 is "one policy", on-policy;
asynchronous trainers bound staleness at a few versions."""


class VersionHistogram:
    """Counts per bucket of a whole number of policy versions (``VERSION_BUCKETS``), and the
    sum; ``cumulative`` gives a histogram family's input, as ``PhaseHistogram``'s does."""

    __slots__ = ("counts", "sum")

    def __init__(self) -> None:
        self.counts = [0] * (len(VERSION_BUCKETS) + 1)
        self.sum = 0

    def add(self, versions: int) -> None:
        self.counts[bisect_left(VERSION_BUCKETS, versions)] += 1
        self.sum += versions

    def cumulative(self) -> tuple[list[tuple[str, int]], float]:
        counts, total = list(self.counts), self.sum
        running, buckets = 0, []
        for bound, count in zip((*map(str, VERSION_BUCKETS), "+Inf"), counts, strict=True):
            running += count
            buckets.append((bound, running))
        return buckets, float(total)


class StalenessCounts:
    """Which policies served the rollouts a trainer got: per scored rollout, its ``span``
    (newest serving version minus oldest) and its ``age`` at the trainer (the trainer's
    version when it got the rollout minus the oldest serving one), and how many were stale."""

    __slots__ = ("age", "newest_age", "span", "stale")

    def __init__(self) -> None:
        self.span = VersionHistogram()
        self.age = VersionHistogram()
        self.newest_age: int | None = None
        """The age of the last rollout handed over (None before one with versions)."""
        self.stale = 0

    def add(self, span: int | None, age: int | None, *, stale: bool = False) -> None:
        if span is not None:
            self.span.add(span)
        if age is not None:
            self.age.add(age)
            self.newest_age = age
        self.stale += stale


class PhaseHistogram:
    """Counts per bucket (the last is above every bound) and the sum, of one phase."""

    __slots__ = ("counts", "sum")

    def __init__(self) -> None:
        self.counts = [0] * (len(BUCKETS) + 1)
        self.sum = 0.0

    def add(self, seconds: float) -> None:
        self.counts[bisect_left(BUCKETS, seconds)] += 1  # first bound >= seconds: Prometheus' le
        self.sum += seconds

    def cumulative(self) -> tuple[list[tuple[str, int]], float]:
        """``(le, count)`` pairs ending with ``+Inf``, and the sum: a histogram family's input."""
        counts, total = list(self.counts), self.sum  # one copy: a consistent pair of numbers
        running, buckets = 0, []
        for bound, count in zip((*map(repr, BUCKETS), "+Inf"), counts, strict=True):
            running += count
            buckets.append((bound, running))
        return buckets, total


class RolloutCounts:
    """What happened to the rollouts of one process so far.

    ``failed`` counts by failure kind every failure record (an invalid task line too, which
    never started). ``abandoned`` counts the started rollouts the run stopped under with no
    record (a resume runs them again). ``in_flight`` is started minus ended. The histograms
    hold the phases of every rollout that produced a result, scored or failed.
    """

    def __init__(self) -> None:
        self.started = 0
        self.finished = 0
        self.ended_failed = 0
        self.abandoned = 0
        self.failed: dict[str, int] = {}
        self.reward_sum = 0.0
        self.phases: dict[str, PhaseHistogram] = {phase: PhaseHistogram() for phase in PHASES}
        self.policy_span = VersionHistogram()
        """Policy updates each scored rollout straddled (newest serving version minus oldest),
        of the rollouts that recorded versions."""

    @property
    def in_flight(self) -> int:
        return self.started - self.finished - self.ended_failed - self.abandoned

    @property
    def mean_reward(self) -> float | None:
        return self.reward_sum / self.finished if self.finished else None

    def rollout_started(self) -> None:
        self.started += 1

    def rollout_finished(self, result: AgentResult, reward: float) -> None:
        self.finished += 1
        self.reward_sum += reward
        self._time(result.timings)
        versions = result.policy_versions
        if versions:
            self.policy_span.add(max(versions) - min(versions))

    def rollout_failed(self, kind: str, result: AgentResult | None) -> None:
        self.failed[kind] = self.failed.get(kind, 0) + 1
        if kind != _INVALID_INPUT:  # an invalid task line was never started
            self.ended_failed += 1
        if result is not None:
            self._time(result.timings)

    def rollout_abandoned(self) -> None:
        self.abandoned += 1

    def _time(self, timings: Mapping[str, float]) -> None:
        phases = self.phases
        for phase, seconds in timings.items():
            histogram = phases.get(phase)
            if histogram is None:
                histogram = phases[phase] = PhaseHistogram()
            histogram.add(seconds)


class ObservedAgent:
    """An agent whose every rollout is counted in ``counts`` (the agent server's metrics)."""

    def __init__(self, agent: Agent, counts: RolloutCounts | None = None) -> None:
        self.agent = agent
        self.name = agent.name
        self.counts = counts or RolloutCounts()
        self._takes_context = takes_context(agent)

    async def run(
        self,
        task: JsonDict,
        env: EnvironmentClient,
        model: Model,
        context: RolloutContext = NO_CONTEXT,
    ) -> AgentResult:
        counts = self.counts
        counts.rollout_started()
        try:
            if self._takes_context:
                result = await self.agent.run(task, env, model, context)
            else:  # an agent written before the context (warned when wrapped)
                result = await self.agent.run(task, env, model)  # type: ignore[call-arg]
        except BaseException as error:  # a service unreachable, a cancelled request, a bug
            counts.rollout_failed(_kind_of(error), None)
            raise
        failure = result.failure or (result.verdict.failure if result.verdict else None)
        if failure is not None:
            counts.rollout_failed(str(failure.kind), result)
        else:
            reward = result.verdict.reward if result.verdict is not None else 0.0
            counts.rollout_finished(result, float(reward))
        return result


def endpoint_stats(model: Model) -> list[JsonDict]:
    """One dict per endpoint (url, calls, retries, failures, paused_calls, paused_seconds[,
    healthy]).

    A model with several endpoints (``palaestra.models.pool``) lists them itself
    (``endpoint_stats()``); any other model is one endpoint with its ``ModelStats``.
    """
    listed: Any = getattr(model, "endpoint_stats", None)
    if callable(listed):
        entries = listed()
        return [dict(entry) for entry in entries if isinstance(entry, dict) and "url" in entry]
    stats = model.stats
    return [
        {
            "url": _endpoint_of(model),
            "calls": stats.requests,
            "retries": stats.retries,
            "failures": stats.failures,
            "paused_calls": stats.paused_calls,
            "paused_seconds": round(stats.paused_seconds, 3),
        }
    ]


def _endpoint_of(model: Model) -> str:
    for owner in (model, getattr(model, "endpoint", None)):
        url = getattr(owner, "base_url", None)
        if isinstance(url, str):
            return url
    return model.name


def runner_counts(runner: object) -> JsonDict:
    """The counters of a runner's model and environment run here (a ``BoundAgent``'s), as
    plain JSON: what a worker sends the collector with each result, so the collector's
    ``/metrics`` serves the calls made in its workers (``palaestra.distributed``).

    ``endpoints``: ``endpoint_stats`` of the model (``pool``: whether it is a model pool, whose
    entries are the run summary's too); ``tools``, ``tool_errors`` (``[tool, kind, count]``)
    and the session counts of an environment run in this process. Cheap enough to send with
    every result, encoding included (measured: benchmarks/results/micro.md).
    """
    counts: JsonDict = {}
    if not isinstance(runner, BoundAgent):  # a served agent counts on its server
        return counts
    model = runner.model
    counts["endpoints"] = endpoint_stats(model)
    counts["pool"] = callable(getattr(model, "endpoint_stats", None))
    env = runner.env
    if isinstance(env, LocalEnvironmentClient):  # a served one counts on its server
        counts["tools"] = dict(env.tool_calls)
        counts["tool_errors"] = [[tool, kind, n] for (tool, kind), n in env.tool_errors.items()]
        counts["sessions_live"] = len(env.sessions)
        counts["sessions_expired"] = env.sessions.expired
        counts["stuck_threads"] = env.stuck_threads
    return counts


def _kind_of(error: BaseException) -> str:
    if isinstance(error, asyncio.CancelledError):
        return "cancelled"
    return str(getattr(error, "kind", FailureKind.INTERNAL_ERROR))
