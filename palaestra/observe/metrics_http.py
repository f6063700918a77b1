"""Where the metrics are served: ``GET /metrics`` of every server, and ``collect``'s own port.

Each server adds one route (``metrics_route``); the sources it reads are named here, per kind
of server, so the apps stay as they were. ``prometheus_client`` is imported on the first
scrape, never when a server module loads. The route sits behind the server's ``Guard`` like
every other route: with a token set, a scrape without it is a 401 (Prometheus sends one with
``authorization: {credentials: ...}`` in its scrape config).

``palaestra collect --metrics-port`` serves the same families without Starlette
(``metrics_run``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from palaestra.observe.sources import local_sources
from palaestra.types import JsonDict

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from palaestra.agents.base import Agent
    from palaestra.environment.running.client import EnvironmentClient
    from palaestra.gateway import GatewayCounts
    from palaestra.models.base import Model
    from palaestra.observe.metrics import Source

METRICS = "/metrics"

SourcesOf = Callable[[], Iterable["Source"]]
"""Builds a server's sources on the first scrape (so ``prometheus_client`` loads only then)."""


def metrics_route(sources: SourcesOf) -> Route:
    """``GET /metrics``: Prometheus text of the families ``sources()`` yields."""
    registry: CollectorRegistry | None = None

    async def metrics(request: Request) -> Response:
        nonlocal registry
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        if registry is None:
            from palaestra.observe.metrics import registry_of

            registry = registry_of(sources())
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    return Route(METRICS, metrics, methods=["GET"])


def environment_metrics(client: EnvironmentClient, caps: Any = None) -> SourcesOf:
    """An environment server's sources: tools, sessions (and its cap), worker pool."""

    def sources() -> list[Source]:
        from palaestra.observe import metrics

        found = local_sources(client)
        if caps is not None:
            found.append(metrics.session_cap_families(caps))
        return found

    return sources


def agent_metrics(agent: Agent, env: EnvironmentClient, model: Model) -> SourcesOf:
    """An agent server's sources: its rollouts (an ``ObservedAgent``'s), model, local env."""

    def sources() -> list[Source]:
        from palaestra.observe import metrics
        from palaestra.observe.metrics_counts import ObservedAgent

        found: list[Source] = []
        if isinstance(agent, ObservedAgent):
            found.append(metrics.rollout_families(agent.counts))
        found.append(metrics.model_families(model))
        return found + local_sources(env)

    return sources


def model_metrics(model: Model, served: dict[str, int]) -> SourcesOf:
    """A model server's sources: requests it received by route, and its model's own calls."""

    def sources() -> list[Source]:
        from palaestra.observe import metrics

        return [metrics.served_families(served), metrics.model_families(model)]

    return sources


def gateway_metrics(counts: GatewayCounts, model: Model) -> Callable[[], tuple[bytes, str]]:
    """A served gateway's ``GET /metrics`` (``Gateway.metrics``): its counts and its model's
    calls, as Prometheus text and its content type."""
    registry: CollectorRegistry | None = None

    def scrape() -> tuple[bytes, str]:
        nonlocal registry
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        if registry is None:
            from palaestra.observe import metrics

            registry = metrics.registry_of(
                [metrics.gateway_families(counts), metrics.model_families(model)]
            )
        return generate_latest(registry), CONTENT_TYPE_LATEST

    return scrape


def stack_metrics(servers: Callable[[], list[JsonDict]]) -> SourcesOf:
    """A stack head's sources: which of its servers are up."""

    def sources() -> list[Source]:
        from palaestra.observe import metrics

        return [metrics.stack_families(servers)]

    return sources
