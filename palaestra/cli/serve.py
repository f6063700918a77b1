"""``palaestra serve``: expose a model, an environment or an agent over HTTP."""

from __future__ import annotations

import click


@click.group("serve")
def serve_group() -> None:
    """Serve a model, an environment or an agent over HTTP (NeMo Gym wire protocol)."""
