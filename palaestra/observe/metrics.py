"""Prometheus metric families, built from palaestra's own counters when a scraper asks.

Nothing here runs per rollout. Each server keeps plain counters where the work happens
(``RolloutCounts``, ``ModelStats``, the environment client's tool counters, its session store,
its worker pool) and a ``Sources`` collector reads them into families at scrape time; the text
is ``prometheus_client``'s own (``exposition``). Names and labels are listed in
docs/metrics.md; every name starts with ``palaestra_``.
"""

from __future__ import annotations

import os
import resource
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from palaestra.observe.metrics_counts import endpoint_stats
from palaestra.transport import shown_url
from palaestra.types import JsonDict

if TYPE_CHECKING:
    from palaestra.environment.running.client import LocalEnvironmentClient
    from palaestra.gateway import GatewayCounts
    from palaestra.models.base import Model
    from palaestra.observe.metrics_counts import RolloutCounts, StalenessCounts, VersionHistogram
    from palaestra.sandbox.pool import WorkerPool

Source = Callable[[], Iterable[Metric]]
"""Something that yields metric families when called (at scrape time)."""

P = "palaestra_"


class Sources(Collector):
    """A ``prometheus_client`` collector yielding the families of each source, in order."""

    def __init__(self, sources: Iterable[Source]) -> None:
        self.sources = list(sources)

    def collect(self) -> Iterator[Metric]:
        for source in self.sources:
            yield from source()


def registry_of(sources: Iterable[Source]) -> CollectorRegistry:
    """A registry of ``sources`` and this process's CPU and memory (``process_*``)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(Sources([*sources, children_families]))
    ProcessCollector(registry=registry)
    return registry


def rollout_families(counts: RolloutCounts) -> Source:
    """Rollouts started, finished, failed by kind, in flight; phase seconds; reward so far."""

    def families() -> Iterator[Metric]:
        yield CounterMetricFamily(f"{P}rollouts_started", "Rollouts started.", value=counts.started)
        yield CounterMetricFamily(
            f"{P}rollouts_finished", "Rollouts that ended scored.", value=counts.finished
        )
        failed = CounterMetricFamily(
            f"{P}rollouts_failed",
            "Rollouts that ended as a failure record, by failure kind.",
            labels=["kind"],
        )
        for kind, count in sorted(dict(counts.failed).items()):
            failed.add_metric([kind], count)
        yield failed
        yield CounterMetricFamily(
            f"{P}rollouts_abandoned",
            "Rollouts started that the run stopped under, with no record (a resume reruns them).",
            value=counts.abandoned,
        )
        yield GaugeMetricFamily(
            f"{P}rollouts_in_flight", "Rollouts started and not ended.", value=counts.in_flight
        )
        phases = HistogramMetricFamily(
            f"{P}rollout_phase_seconds",
            "Seconds each rollout spent per phase (seed, model, tools, verify, total).",
            labels=["phase"],
        )
        for phase, histogram in list(counts.phases.items()):
            buckets, total = histogram.cumulative()
            phases.add_metric([phase], buckets, total)
        yield phases
        yield GaugeMetricFamily(
            f"{P}reward_sum", "Sum of the rewards of the scored rollouts.", value=counts.reward_sum
        )
        mean = counts.mean_reward
        yield GaugeMetricFamily(
            f"{P}reward_mean",
            "Mean reward of the scored rollouts so far (NaN before the first).",
            value=float("nan") if mean is None else mean,
        )
        yield _versions(
            "rollout_policy_span",
            "Policy updates each scored rollout straddled (newest serving version - oldest).",
            counts.policy_span,
        )

    return families


def staleness_families(counts: StalenessCounts) -> Source:
    """The policy versions behind the rollouts a ``RolloutSampler`` handed a trainer: each
    one's span and its age at the trainer, the last one's age, and how many were stale."""

    def families() -> Iterator[Metric]:
        yield _versions(
            "trainer_rollout_policy_span",
            "Policy updates each scored rollout straddled (newest serving version - oldest).",
            counts.span,
        )
        yield _versions(
            "trainer_rollout_policy_age",
            "Versions each rollout's oldest serving policy was behind the trainer's at hand-over.",
            counts.age,
        )
        newest = counts.newest_age
        yield GaugeMetricFamily(
            f"{P}trainer_rollout_policy_age_last",
            "Age of the last rollout handed over, in policy versions (NaN before one).",
            value=float("nan") if newest is None else float(newest),
        )
        yield CounterMetricFamily(
            f"{P}trainer_rollouts_stale",
            "Scored rollouts past the sampler's max_staleness (masked or excluded).",
            value=counts.stale,
        )

    return families


def _versions(name: str, documentation: str, histogram: VersionHistogram) -> Metric:
    family = HistogramMetricFamily(f"{P}{name}", documentation)
    buckets, total = histogram.cumulative()
    family.add_metric([], buckets, total)
    return family


def model_families(model: Model) -> Source:
    """Model calls, retries and errors per endpoint (each endpoint of a pool when it has one)."""

    def families() -> Iterator[Metric]:
        yield from endpoint_families(endpoint_stats(model))

    return families


def endpoint_families(entries: Iterable[JsonDict]) -> Iterator[Metric]:
    """The model families of ``endpoint_stats`` entries (url, calls, retries, failures,
    paused calls and seconds[, healthy]): one process's, or the workers' added up."""
    calls = CounterMetricFamily(
        f"{P}model_calls", "Requests sent to the model endpoint.", labels=["endpoint"]
    )
    retries = CounterMetricFamily(
        f"{P}model_retries", "Retries spent on the model endpoint.", labels=["endpoint"]
    )
    errors = CounterMetricFamily(
        f"{P}model_errors",
        "Model requests that failed once their retries were spent.",
        labels=["endpoint"],
    )
    paused = CounterMetricFamily(
        f"{P}model_paused_calls",
        "Model requests that met the endpoint paused for a weight update (waits, not retries).",
        labels=["endpoint"],
    )
    paused_seconds = CounterMetricFamily(
        f"{P}model_paused_seconds",
        "Seconds model requests slept while the endpoint was paused.",
        labels=["endpoint"],
    )
    healthy = GaugeMetricFamily(
        f"{P}model_endpoint_healthy",
        "1 while the pool sends requests to the endpoint, 0 while it is set aside.",
        labels=["endpoint"],
    )
    for entry in entries:
        # Shown, not the entry's ``url`` itself: that stays the key the workers' counts are
        # added up by and a pool row's ``_palaestra.endpoints`` names; a label is only read.
        label = [shown_url(str(entry["url"]))]
        calls.add_metric(label, _number(entry.get("calls")))
        retries.add_metric(label, _number(entry.get("retries")))
        errors.add_metric(label, _number(entry.get("failures")))
        paused.add_metric(label, _number(entry.get("paused_calls")))
        paused_seconds.add_metric(label, _number(entry.get("paused_seconds")))
        if entry.get("healthy") is not None:
            healthy.add_metric(label, 1.0 if entry["healthy"] else 0.0)
    yield from (calls, retries, errors, paused, paused_seconds)
    if healthy.samples:
        yield healthy


def environment_families(client: LocalEnvironmentClient) -> Source:
    """Tool calls and errors per tool, sessions, stuck threads and the worker pool."""

    def families() -> Iterator[Metric]:
        yield from tool_families(
            dict(client.tool_calls),
            dict(client.tool_errors),
            live=len(client.sessions),
            expired=client.sessions.expired,
            stuck=client.stuck_threads,
        )
        pool = client._pool  # started by the environment's first run_in_pool, or never
        if pool is not None:
            yield from pool_families(pool)()
        yield from sandbox_families(client.environment)()

    return families


def tool_families(
    calls: dict[str, int],
    errors: dict[tuple[str, str], int],
    *,
    live: int,
    expired: int,
    stuck: int,
) -> Iterator[Metric]:
    """Tool calls per tool, tool errors per tool and kind, sessions and stuck threads: one
    environment client's, or the workers' added up."""
    called = CounterMetricFamily(
        f"{P}tool_calls", "Tool calls received, per tool.", labels=["tool"]
    )
    for name, count in sorted(calls.items()):
        called.add_metric([name], count)
    yield called
    failed = CounterMetricFamily(
        f"{P}tool_errors",
        "Tool calls that raised, per tool and kind (rejected arguments or tool, "
        "tool_error, timeout).",
        labels=["tool", "kind"],
    )
    for (name, kind), count in sorted(errors.items()):
        failed.add_metric([name, kind], count)
    yield failed
    yield GaugeMetricFamily(f"{P}sessions_live", "Sessions open now.", value=live)
    yield CounterMetricFamily(
        f"{P}sessions_expired", "Sessions dropped after their time to live.", value=expired
    )
    yield GaugeMetricFamily(
        f"{P}stuck_threads",
        "Worker threads still running environment code abandoned at its time limit.",
        value=stuck,
    )


def worker_families(counts: Callable[[], JsonDict]) -> Source:
    """The model and environment counters of a run's workers (``--workers``, Ray), added up
    by the dispatcher (``Dispatcher.worker_counts``) from what each sent last."""

    def families() -> Iterator[Metric]:
        total = counts()
        if "endpoints" in total:
            yield from endpoint_families(total["endpoints"])
        if "tools" in total:
            errors = {(str(t), str(k)): int(n) for t, k, n in total["tool_errors"]}
            yield from tool_families(
                total["tools"],
                errors,
                live=total["sessions_live"],
                expired=total["sessions_expired"],
                stuck=total["stuck_threads"],
            )

    return families


def session_cap_families(caps: Any) -> Source:
    """An environment server's session cap and the seeds it refused (``SessionCaps``)."""

    def families() -> Iterator[Metric]:
        yield CounterMetricFamily(
            f"{P}sessions_refused",
            "Seeds refused because the server held max_sessions sessions.",
            value=caps.refused,
        )
        if caps.max_sessions is not None:
            yield GaugeMetricFamily(
                f"{P}sessions_max", "The server's session cap.", value=caps.max_sessions
            )

    return families


def pool_families(pool: WorkerPool) -> Source:
    """The worker pool: workers alive, tasks, crashes, limit hits by kind, CPU and memory."""

    def families() -> Iterator[Metric]:
        stats = pool.stats()
        yield GaugeMetricFamily(
            f"{P}pool_workers", "Worker processes the pool keeps.", value=pool.size
        )
        yield GaugeMetricFamily(
            f"{P}pool_workers_alive", "Worker processes alive now.", value=stats.workers
        )
        yield GaugeMetricFamily(f"{P}pool_busy", "Tasks running now.", value=stats.busy)
        yield GaugeMetricFamily(
            f"{P}pool_queued", "Tasks waiting for a worker.", value=stats.queued
        )
        counters = {
            "tasks": ("Tasks submitted.", stats.tasks),
            "task_errors": ("Tasks whose function raised.", stats.errors),
            "task_failures": ("Tasks lost after their retries.", stats.failures),
            "crashes": ("Workers that died running a task.", stats.crashes),
            "retries": ("Tasks retried on a fresh worker.", stats.retries),
            "restarts": ("Workers started again.", stats.restarts),
        }
        for name, (text, value) in counters.items():
            yield CounterMetricFamily(f"{P}pool_{name}", text, value=value)
        hits = CounterMetricFamily(
            f"{P}pool_limit_hits",
            "Tasks that broke a limit, by kind (timeout, memory, cpu_time).",
            labels=["kind"],
        )
        for kind, count in sorted(dict(getattr(pool, "limit_hits", {})).items()):
            hits.add_metric([kind], count)
        yield hits
        cpu, peak = worker_usage(pool)
        yield GaugeMetricFamily(
            f"{P}pool_cpu_seconds",
            "CPU seconds (user + system) spent by the live workers, their tasks included.",
            value=cpu,
        )
        yield GaugeMetricFamily(
            f"{P}pool_peak_memory_bytes",
            "The largest peak resident memory of a live worker (its tasks included).",
            value=peak,
        )

    return families


def sandbox_families(environment: object) -> Source:
    """Runs and limit hits of the ``Sandbox`` objects the environment holds as attributes
    (``self.sandbox = Sandbox(...)``, as the built-in code environments do); none: nothing."""

    def families() -> Iterator[Metric]:
        # Not imported here: loading the sandbox package costs a run more CPU than an hour of
        # scrapes; an environment that holds a Sandbox has loaded it already.
        runner = sys.modules.get("palaestra.sandbox.runner")
        if runner is None:
            return
        held = [v for v in vars(environment).values() if isinstance(v, runner.Sandbox)]
        if not held:
            return
        yield CounterMetricFamily(
            f"{P}sandbox_runs",
            "Sandboxed runs and Python session cells finished.",
            value=sum(sandbox.runs for sandbox in held),
        )
        hits = CounterMetricFamily(
            f"{P}sandbox_limit_hits",
            "Sandboxed runs and cells that ran into a rule, by limit (wall_time, memory, ...).",
            labels=["kind"],
        )
        total: dict[str, int] = {}
        for sandbox in held:
            for kind, count in dict(sandbox.limit_hits).items():
                total[kind] = total.get(kind, 0) + count
        for kind, count in sorted(total.items()):
            hits.add_metric([kind], count)
        yield hits

    return families


def children_families() -> Iterator[Metric]:
    """CPU and peak memory of this process's finished child processes: sandboxed runs (their
    own children included) and pool workers that ended, read from ``getrusage``."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    yield CounterMetricFamily(
        f"{P}children_cpu_seconds",
        "CPU seconds (user + system) of finished child processes (sandboxed runs, workers).",
        value=usage.ru_utime + usage.ru_stime,
    )
    yield GaugeMetricFamily(
        f"{P}children_peak_memory_bytes",
        "The largest peak resident memory of a finished child process.",
        value=usage.ru_maxrss * 1024,
    )


_TICKS = os.sysconf("SC_CLK_TCK")


def worker_usage(pool: WorkerPool) -> tuple[float, float]:
    """(CPU seconds summed, largest peak RSS in bytes) of the pool's live workers, from /proc."""
    cpu, peak = 0.0, 0.0
    for worker in pool._workers:
        process = worker.process
        if process is None or process.returncode is not None:
            continue
        try:
            with open(f"/proc/{process.pid}/stat", "rb") as stat:
                fields = stat.read().rpartition(b")")[2].split()
            cpu += (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime
            with open(f"/proc/{process.pid}/status", "rb") as status:
                for line in status:
                    if line.startswith(b"VmHWM:"):
                        peak = max(peak, float(line.split()[1]) * 1024)
        except (OSError, IndexError, ValueError):
            continue  # it died since: its numbers are gone with it
    return cpu, peak


def served_families(served: dict[str, int]) -> Source:
    """Requests a model server answered, by route."""

    def families() -> Iterator[Metric]:
        family = CounterMetricFamily(
            f"{P}model_requests_served", "Requests this model server received.", labels=["route"]
        )
        for route, count in sorted(dict(served).items()):
            family.add_metric([route], count)
        yield family

    return families


def gateway_families(counts: GatewayCounts) -> Source:
    """A gateway's calls by API, failed and refused calls, pauses: the calls a pause held and
    the seconds it waited for calls in flight to finish."""

    def families() -> Iterator[Metric]:
        calls = CounterMetricFamily(
            f"{P}gateway_calls", "Harness calls the model answered, by API.", labels=["api"]
        )
        for api, count in sorted(dict(counts.calls).items()):
            calls.add_metric([api], count)
        yield calls
        yield CounterMetricFamily(
            f"{P}gateway_call_errors", "Harness calls the model failed.", value=counts.errors
        )
        yield CounterMetricFamily(
            f"{P}gateway_calls_refused",
            "Harness calls refused before the model (no secret, no rollout, malformed).",
            value=counts.refused,
        )
        yield CounterMetricFamily(
            f"{P}gateway_paused_calls",
            "Harness calls that arrived during a pause and waited for the resume.",
            value=counts.paused_calls,
        )
        yield CounterMetricFamily(f"{P}gateway_pauses", "Pauses asked.", value=counts.pauses)
        yield CounterMetricFamily(
            f"{P}gateway_drain_seconds",
            "Seconds pauses waited for the calls in flight to finish.",
            value=counts.drain_seconds,
        )
        yield CounterMetricFamily(
            f"{P}gateway_rollouts_opened", "Rollouts opened.", value=counts.rollouts_opened
        )
        yield GaugeMetricFamily(
            f"{P}gateway_calls_in_flight", "Harness calls at the model now.", value=counts.in_flight
        )

    return families


def stack_families(servers: Callable[[], list[JsonDict]]) -> Source:
    """A stack's servers: 1 while each runs, 0 once it stopped or died."""

    def families() -> Iterator[Metric]:
        up = GaugeMetricFamily(
            f"{P}stack_server_up",
            "1 while the stack's server is running, else 0.",
            labels=["name", "kind"],
        )
        for server in servers():
            running = server.get("status") == "ready"
            up.add_metric([str(server.get("name")), str(server.get("kind"))], float(running))
        yield up

    return families


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) else 0.0
