"""``palaestra serve gateway``: the gateway (``palaestra.gateway``) as a server of its own.

The model is built from a ``ModelConfig`` as a run builds it and checked before anything
listens; the gateway then serves until interrupted, with its admin routes behind an admin token
(so a trainer or a script opens rollouts and pauses the gateway over HTTP) and its metrics on
``GET /metrics``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from palaestra.collection.assembly import build_model
from palaestra.gateway import Gateway
from palaestra.http.announce import ready_line
from palaestra.observe.metrics_http import gateway_metrics

if TYPE_CHECKING:
    from palaestra.spec import ModelConfig


async def serve_gateway(
    config: ModelConfig,
    *,
    admin_token: str,
    host: str = "127.0.0.1",
    port: int = 0,
    unix_socket: Path | None = None,
    model_id: str | None = None,
    show_token: bool = False,
) -> None:
    """Serve a gateway in front of the model ``config`` describes until interrupted.

    Prints where it listens and how to open a rollout to stderr (the admin token too with
    ``show_token``: one the caller made up), and the ready line (``palaestra.http.announce``)
    with the URL to stdout."""
    model = build_model(config)
    try:
        await model.check()  # load the weights / reach the backend before saying "serving"
        gateway = Gateway(
            model,
            host=host,
            port=port,
            unix_socket=unix_socket,
            admin_token=admin_token,
            model_id=model_id,
            signals=True,
        )
        gateway.metrics = gateway_metrics(gateway.counts, model)
        await gateway.start()
        also = f" and {gateway.unix_url}" if gateway.unix_url else ""
        shown = admin_token if show_token else "<admin token>"
        print(
            f"serving a gateway to {gateway.model_id} on {gateway.url}{also}\n"
            + (f"admin token: {admin_token}\n" if show_token else "")
            + f"open a rollout: curl -X POST -H 'Authorization: Bearer {shown}' "
            f"{gateway.url}/admin/rollouts  (answers its base_url and api_key)",
            file=sys.stderr,
            flush=True,
        )
        facts = {"unix": gateway.unix_url} if gateway.unix_url else {}
        print(ready_line(gateway.url, **facts), flush=True)
        try:
            await gateway.wait_closed()
        finally:
            await gateway.aclose()
    finally:
        await model.aclose()
