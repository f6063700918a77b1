"""The built-in ``openai`` model backend: any OpenAI-compatible server at ``config.url``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from palaestra.models.auto_api import AutoApiModel
from palaestra.models.endpoint import RemoteModel
from palaestra.models.openai_chat import OpenAIChatModel
from palaestra.models.openai_responses import OpenAIResponsesModel

if TYPE_CHECKING:
    from palaestra.spec import ModelConfig
    from palaestra.transport import HttpClient

_CLIENTS: dict[str, type[RemoteModel]] = {
    "responses": OpenAIResponsesModel,
    "chat": OpenAIChatModel,
    "auto": AutoApiModel,
}


def openai_backend(config: ModelConfig, *, http: HttpClient | None = None) -> RemoteModel:
    """The client of ``config.api``: ``responses``, ``chat``, or ``auto`` (detected on the
    run's first call)."""
    return _CLIENTS[config.api](config, http=http)
