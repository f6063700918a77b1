"""``palaestra collect --metrics-port``: the run's metrics, served while it runs.

The families are served from a daemon thread of ``prometheus_client`` (``start_http_server``)
bound to 127.0.0.1 and stopped when the run ends; it never keeps the process alive. A thread
rather than the run's event loop: a scrape is answered even while the loop is stalled (a
blocking environment, a stuck verifier), which is when one wants to look. Nothing here
imports ``prometheus_client`` or Starlette until a port is asked for.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

from palaestra.errors import ConfigError

if TYPE_CHECKING:
    from palaestra.agents.base import RolloutRunner
    from palaestra.collection.collector import CollectConfig
    from palaestra.env_client import EnvironmentClient
    from palaestra.models.base import Model
    from palaestra.observe.metrics import Source
    from palaestra.observe.metrics_counts import RolloutCounts

_log = logging.getLogger("palaestra.collect")


def runner_sources(runner: RolloutRunner, counts: RolloutCounts) -> list[Source]:
    """A collector's sources: its rollouts, and the model and environment it runs here (or
    in its workers)."""
    from palaestra.observe import metrics

    found = [metrics.rollout_families(counts)]
    model: Model | None = getattr(runner, "model", None)
    if model is not None:  # an agent bound here; a served agent's model is its server's
        found.append(metrics.model_families(model))
    env = getattr(runner, "env", None)
    if env is not None:
        found += local_sources(env)
    workers = getattr(runner, "worker_counts", None)
    if callable(workers):  # rollouts run in workers: their model and environment counters
        found.append(metrics.worker_families(workers))
    return found


def local_sources(env: EnvironmentClient) -> list[Source]:
    """An environment run in this process has tool, session and pool counters; a served one
    keeps them on its server."""
    from palaestra.env_client import LocalEnvironmentClient
    from palaestra.observe import metrics

    if isinstance(env, LocalEnvironmentClient):
        return [metrics.environment_families(env)]
    return []


@contextlib.contextmanager
def run_metrics(port: int | None, runner: RolloutRunner, config: CollectConfig) -> Iterator[None]:
    """Serve the run's metrics on 127.0.0.1:``port`` while the block runs (nothing if None).

    Sets ``config.observer`` to the counters it serves. A port that cannot be bound is a
    one-line ``ConfigError`` before anything runs.
    """
    if port is None:
        yield
        return
    from prometheus_client import start_http_server

    from palaestra.observe.metrics import registry_of
    from palaestra.observe.metrics_counts import RolloutCounts

    counts = RolloutCounts()
    registry = registry_of(runner_sources(runner, counts))
    try:
        server, thread = start_http_server(port, addr="127.0.0.1", registry=registry)
    except OSError as error:
        raise ConfigError(
            f"cannot serve metrics on 127.0.0.1:{port} (metrics_port, --metrics-port): "
            f"{error.strerror}"
        ) from None
    config.observer = counts
    _log.info("metrics: http://127.0.0.1:%d/metrics", server.server_port)
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
