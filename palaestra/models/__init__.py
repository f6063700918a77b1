"""Model clients: remote OpenAI-compatible endpoints and the embedded local model.

The clients (and the HTTP client under them) load on first use of their names, so ``import
palaestra`` (which needs only the ``Model`` protocol) stays light; the local model (llama.cpp)
loads only through ``open_model("local")``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from palaestra.models.base import Model, ModelStats

if TYPE_CHECKING:
    from palaestra.models.http import RetryPolicy, Timeouts
    from palaestra.models.openai_chat import OpenAIChatModel
    from palaestra.models.openai_responses import OpenAIResponsesModel
    from palaestra.models.resolve import open_model

_LAZY = {
    "RetryPolicy": "palaestra.models.http",
    "Timeouts": "palaestra.models.http",
    "OpenAIChatModel": "palaestra.models.openai_chat",
    "OpenAIResponsesModel": "palaestra.models.openai_responses",
    "open_model": "palaestra.models.resolve",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'palaestra.models' has no attribute {name!r}")


__all__ = [
    "Model",
    "ModelStats",
    "OpenAIChatModel",
    "OpenAIResponsesModel",
    "RetryPolicy",
    "Timeouts",
    "open_model",
]
