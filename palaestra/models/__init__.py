"""Model backends: remote OpenAI-compatible endpoints, the embedded local model, and plug-ins.

One ``ModelConfig`` (``palaestra.spec``) describes a model; ``build_model(config)`` builds it
with the backend ``config.backend`` names, and ``model_config(spec, ...)`` reads one from what a
user wrote (``local``, a URL, or a name in ``palaestra_models.yaml``). A backend is a
``ModelBackend``: a callable ``(config, *, http=None) -> Model``, built in (``openai``,
``local``) or registered by an installed package under the entry-point group
``palaestra.models``.

The clients (and the HTTP client under them) load on first use of their names, so ``import
palaestra`` (which needs only the ``Model`` protocol) stays light; the local model's llama.cpp
loads only when the ``local`` backend first answers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from palaestra._util.lazy import lazy_exports
from palaestra.models.base import Model, ModelBackend, ModelStats

if TYPE_CHECKING:
    from palaestra.models.backends import (
        MODEL_BACKEND_GROUP,
        MODEL_BACKENDS,
        backend_options,
        build_model,
        read_api_key,
    )
    from palaestra.models.openai.auto_api import AutoApiModel
    from palaestra.models.openai.chat import OpenAIChatModel
    from palaestra.models.openai.responses import OpenAIResponsesModel
    from palaestra.models.openai.retry import RetryPolicy, Timeouts
    from palaestra.models.resolve import model_config, open_model
    from palaestra.spec import ModelConfig

_LAZY = {
    "AutoApiModel": "palaestra.models.openai.auto_api",
    "MODEL_BACKEND_GROUP": "palaestra.models.backends",
    "MODEL_BACKENDS": "palaestra.models.backends",
    "ModelConfig": "palaestra.spec",
    "OpenAIChatModel": "palaestra.models.openai.chat",
    "OpenAIResponsesModel": "palaestra.models.openai.responses",
    "RetryPolicy": "palaestra.models.openai.retry",
    "Timeouts": "palaestra.models.openai.retry",
    "backend_options": "palaestra.models.backends",
    "build_model": "palaestra.models.backends",
    "model_config": "palaestra.models.resolve",
    "open_model": "palaestra.models.resolve",
    "read_api_key": "palaestra.models.backends",
}
__getattr__ = lazy_exports("palaestra.models", _LAZY)


__all__ = [
    "MODEL_BACKENDS",
    "MODEL_BACKEND_GROUP",
    "AutoApiModel",
    "Model",
    "ModelBackend",
    "ModelConfig",
    "ModelStats",
    "OpenAIChatModel",
    "OpenAIResponsesModel",
    "RetryPolicy",
    "Timeouts",
    "backend_options",
    "build_model",
    "model_config",
    "open_model",
    "read_api_key",
]
