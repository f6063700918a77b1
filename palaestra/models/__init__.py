"""Model clients: remote OpenAI-compatible endpoints and the embedded local model."""

from palaestra.models.base import Model, ModelStats

__all__ = ["Model", "ModelStats"]
