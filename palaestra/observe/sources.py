"""Where a process's metrics come from: the rollouts it runs, its model, its environment."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from palaestra.agents.base import RolloutRunner
    from palaestra.environment.running.client import EnvironmentClient
    from palaestra.observe.metrics import Source
    from palaestra.observe.metrics_counts import RolloutCounts


def runner_sources(runner: RolloutRunner, counts: RolloutCounts) -> list[Source]:
    """A collector's sources: its rollouts, and the model and environment it runs here (or
    in its workers)."""
    from palaestra.agents.base import BoundAgent
    from palaestra.observe import metrics

    found = [metrics.rollout_families(counts)]
    if isinstance(runner, BoundAgent):  # a served agent's model and env are its servers'
        found.append(metrics.model_families(runner.model))
        found += local_sources(runner.env)
    if runner.worker_counts() is not None:  # rollouts run in workers: their counters
        found.append(metrics.worker_families(lambda: runner.worker_counts() or {}))
    return found


def local_sources(env: EnvironmentClient) -> list[Source]:
    """An environment run in this process has tool, session and pool counters; a served one
    keeps them on its server."""
    from palaestra.environment.running.client import LocalEnvironmentClient
    from palaestra.observe import metrics

    if isinstance(env, LocalEnvironmentClient):
        return [metrics.environment_families(env)]
    return []
