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
from palaestra.observe.sources import runner_sources

if TYPE_CHECKING:
    from palaestra.agents.base import RolloutRunner
    from palaestra.collection.collector import CollectConfig

_log = logging.getLogger("palaestra.collect")


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
