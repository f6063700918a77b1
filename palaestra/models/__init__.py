"""Model clients: remote OpenAI-compatible endpoints and the embedded local model.

The local model (llama.cpp) is not imported here: ``open_model("local")`` loads it on demand.
"""

from palaestra.models.base import Model, ModelStats
from palaestra.models.http import RetryPolicy, Timeouts
from palaestra.models.openai_chat import OpenAIChatModel
from palaestra.models.openai_responses import OpenAIResponsesModel
from palaestra.models.resolve import open_model

__all__ = [
    "Model",
    "ModelStats",
    "OpenAIChatModel",
    "OpenAIResponsesModel",
    "RetryPolicy",
    "Timeouts",
    "open_model",
]
