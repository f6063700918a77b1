"""The plain-Python rollout counters behind ``/metrics``: histogram buckets are Prometheus'
``le`` (a value on a bound is in that bucket), failures and in-flight rollouts add up, and
nothing of this loads ``prometheus_client`` with ``import palaestra`` or a server module."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from palaestra.agents import RolloutContext
from palaestra.environment.running.client import EnvironmentClient
from palaestra.errors import ModelUnreachable
from palaestra.models.base import Model
from palaestra.observe.metrics_counts import BUCKETS, ObservedAgent, PhaseHistogram, RolloutCounts
from palaestra.types import AgentResult, Failure, FailureKind, JsonDict, Verdict


def test_a_value_on_a_bound_is_counted_in_that_bucket_and_above_every_bound_in_inf() -> None:
    histogram = PhaseHistogram()
    for seconds in (0.0005, 0.001, 0.0011, 1.0, 10_000.0):
        histogram.add(seconds)
    buckets, total = histogram.cumulative()
    counts = dict(buckets)
    assert counts["0.001"] == 2 and counts["0.0025"] == 3
    assert counts["1.0"] == 4 and counts[repr(BUCKETS[-1])] == 4 and counts["+Inf"] == 5
    assert buckets[-1] == ("+Inf", 5) and [b for b, _ in buckets][:-1] == list(map(repr, BUCKETS))
    assert total == pytest.approx(0.0005 + 0.001 + 0.0011 + 1.0 + 10_000.0)


def test_in_flight_is_started_minus_ended_and_an_invalid_line_never_started() -> None:
    counts = RolloutCounts()
    for _ in range(3):
        counts.rollout_started()
    counts.rollout_finished(AgentResult(timings={"total": 0.2, "model": 0.1}), 1.0)
    counts.rollout_failed("model_error", AgentResult(timings={"total": 0.3}))
    counts.rollout_failed("invalid_input", None)
    assert (counts.started, counts.finished, counts.in_flight) == (3, 1, 1)
    assert counts.failed == {"model_error": 1, "invalid_input": 1}
    assert counts.phases["total"].counts[bisect_index(0.2)] == 1
    assert sum(counts.phases["total"].counts) == 2 and sum(counts.phases["model"].counts) == 1
    assert counts.mean_reward == 1.0


def bisect_index(seconds: float) -> int:
    return next(i for i, bound in enumerate(BUCKETS) if seconds <= bound)


class Scripted:
    name = "scripted"

    def __init__(self, outcomes: list[AgentResult | BaseException]) -> None:
        self.outcomes = outcomes

    async def run(
        self, task: JsonDict, env: EnvironmentClient, model: Model, context: RolloutContext
    ) -> AgentResult:
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


def test_an_observed_agent_counts_scores_failed_verdicts_and_what_it_raises() -> None:
    scored = AgentResult(verdict=Verdict(reward=0.5), timings={"total": 0.01})
    failed_verdict = AgentResult(
        verdict=Verdict(failure=Failure(FailureKind.VERIFIER_ERROR, "broke")),
        timings={"total": 0.01},
    )
    agent = ObservedAgent(Scripted([scored, failed_verdict, ModelUnreachable("gone")]))

    async def run_all() -> None:
        env: object = None
        for _ in range(2):
            await agent.run({}, env, env)  # type: ignore[arg-type]
        with pytest.raises(ModelUnreachable):
            await agent.run({}, env, env)  # type: ignore[arg-type]

    asyncio.run(run_all())
    counts = agent.counts
    assert (counts.started, counts.finished, counts.in_flight, counts.reward_sum) == (3, 1, 0, 0.5)
    assert counts.failed == {"verifier_error": 1, "model_error": 1}
    assert agent.name == "scripted"


def test_importing_palaestra_and_its_servers_leaves_prometheus_client_unloaded() -> None:
    code = (
        "import sys, palaestra, palaestra.serve.env_app, palaestra.serve.agent_app, "
        "palaestra.serve.model_app, palaestra.stack.head, palaestra.run.collect; "
        "print('prometheus_client' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_a_scrape_of_an_environment_without_a_sandbox_does_not_load_the_sandbox_package() -> None:
    """Loading it took 87 ms of CPU on the first scrape: 11% more CPU per rollout in
    benchmarks/metrics.py (5,000 rollouts), where the counting itself costs under 1%."""
    code = (
        "import sys\n"
        "from prometheus_client import generate_latest\n"
        "from palaestra import LocalEnvironmentClient\n"
        "from palaestra.envs.weather.environment import Weather\n"
        "from palaestra.observe.metrics import registry_of\n"
        "from palaestra.observe.sources import local_sources\n"
        "registry = registry_of(local_sources(LocalEnvironmentClient(Weather())))\n"
        "assert b'palaestra_tool_calls' in generate_latest(registry)\n"
        "print('palaestra.sandbox.runner' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
