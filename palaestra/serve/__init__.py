"""HTTP transports: serve a model (and later environments and agents) over NeMo Gym's protocol."""

from palaestra.http.runner import BackgroundServer, serve_app
from palaestra.serve.model_app import model_app

__all__ = ["BackgroundServer", "model_app", "serve_app"]
