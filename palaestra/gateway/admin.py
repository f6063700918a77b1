"""The gateway's admin routes, for a trainer or a script driving a served gateway.

Every route needs the gateway's admin token as the bearer token (``palaestra serve gateway``
prints it); a gateway made without one serves none of them (404).

- ``POST /admin/rollouts`` (body ``{}`` or ``{"id": ...}``): open a rollout; answers
  ``{"id", "base_url", "api_key"}``.
- ``GET /admin/rollouts/<id>``: its calls and its trajectory (``{"id", "calls", "response"}``).
- ``DELETE /admin/rollouts/<id>``: close it (later calls on its base URL are 404) and answer
  the same as ``GET`` one last time.
- ``POST /admin/pause``: hold new calls, answer once the calls in flight have finished
  (``{"paused": true, "drain_seconds": ...}``); ``POST /admin/resume`` lets them go on.
- ``GET /admin/stats``: the gateway's counts; ``GET /metrics``: the same for Prometheus, when
  the serving process exports them.
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING, Any

import orjson

from palaestra.errors import ConfigError
from palaestra.http.guard import bearer_matches

if TYPE_CHECKING:
    from palaestra.gateway.app import Answer
    from palaestra.gateway.gateway import Gateway
    from palaestra.gateway.rollout import GatewayRollout


def _json(payload: Any, status: int = 200) -> Answer:
    return status, [(b"content-type", b"application/json")], orjson.dumps(payload)


def _described(rollout: GatewayRollout) -> dict[str, Any]:
    return {
        "id": rollout.id,
        "calls": [dataclasses.asdict(call) for call in rollout.calls],
        "response": rollout.response(),
    }


async def answer(
    gateway: Gateway, scope: dict[str, Any], method: str, path: str, body: bytes
) -> Answer:
    from palaestra.gateway.app import error, header

    if gateway.admin_token is None:
        return error(404, f"no route {path}")
    if not bearer_matches(header(scope, b"authorization"), gateway.admin_token.encode()):
        return error(401, "missing or wrong admin token")
    if path == "/metrics" and method == "GET":
        if gateway.metrics is None:
            return error(404, "this gateway exports no metrics")
        content, kind = gateway.metrics()
        return 200, [(b"content-type", kind.encode())], content
    if path == "/admin/stats" and method == "GET":
        return _json(dataclasses.asdict(gateway.counts))
    if path == "/admin/pause" and method == "POST":
        started = time.monotonic()
        await gateway.pause()
        return _json({"paused": True, "drain_seconds": time.monotonic() - started})
    if path == "/admin/resume" and method == "POST":
        gateway.resume()
        return _json({"paused": False})
    if path == "/admin/rollouts" and method == "POST":
        try:
            asked = orjson.loads(body) if body.strip() else {}
        except orjson.JSONDecodeError as exc:
            return error(400, f"request body is not valid JSON: {exc}")
        wanted = asked.get("id") if isinstance(asked, dict) else None
        if wanted is not None and not isinstance(wanted, str):
            return error(400, "field 'id' must be a string", param="id")
        try:
            rollout = gateway.open(wanted)
        except ConfigError as refused:
            return error(409, str(refused), param="id")
        return _json({"id": rollout.id, "base_url": rollout.base_url, "api_key": rollout.api_key})
    if path.startswith("/admin/rollouts/"):
        named = gateway.rollouts.get(path[len("/admin/rollouts/") :])
        if named is None:
            return error(404, "no open rollout of that id")
        if method == "GET":
            return _json(_described(named))
        if method == "DELETE":
            named.close()
            return _json(_described(named))
    return error(404, f"no route {method} {path}")
