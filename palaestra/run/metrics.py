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
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from palaestra.errors import ConfigError
from palaestra.observe.sources import runner_sources

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

    from palaestra.agents.base import RolloutRunner
    from palaestra.collection.collector import CollectConfig
    from palaestra.observe.metrics import Source

_log = logging.getLogger("palaestra.collect")


class MetricsServer:
    """The families a bound metrics port serves: the run's rollout counts (zero until it
    starts) and, once ``observe`` names the run's runner, its model and environment too."""

    def __init__(self, url: str) -> None:
        from palaestra.observe.metrics import rollout_families
        from palaestra.observe.metrics_counts import RolloutCounts

        self.url = url
        self.counts = RolloutCounts()
        self._sources: list[Source] = [rollout_families(self.counts)]

    def observe(self, runner: RolloutRunner, config: CollectConfig) -> None:
        """Serve ``runner``'s families too, and count the run's rollouts (``config.observer``)."""
        self._sources = runner_sources(runner, self.counts)  # one assignment: a scrape sees
        config.observer = self.counts  # either list whole

    def families(self) -> Iterable[Metric]:
        for source in self._sources:
            yield from source()


@contextlib.contextmanager
def run_metrics(
    port: int | None, announce: Callable[[str], None] | None = None
) -> Iterator[MetricsServer | None]:
    """Serve the run's metrics on 127.0.0.1:``port`` while the block runs (nothing if None).

    Bound first, before the run opens anything: a port that cannot be bound is a one-line
    ``ConfigError`` naming it before anything starts, and ``announce`` (else the log) is told
    the URL only once it is bound. The run's families join with ``MetricsServer.observe``.
    """
    if port is None:
        yield None
        return
    from prometheus_client import start_http_server

    from palaestra.observe.metrics import registry_of

    served = MetricsServer(f"http://127.0.0.1:{port}/metrics")
    try:
        server, thread = start_http_server(
            port, addr="127.0.0.1", registry=registry_of([served.families])
        )
    except OSError as error:
        raise ConfigError(
            f"cannot serve metrics on 127.0.0.1:{port} (metrics_port, --metrics-port): "
            f"{error.strerror}"
        ) from None
    (announce or _log.info)(f"metrics: {served.url}")
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
