"""The built-in ``openai`` model backend: any OpenAI-compatible server at ``config.url``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from palaestra.errors import ConfigError
from palaestra.models.openai.auto_api import AutoApiModel
from palaestra.models.openai.chat import OpenAIChatModel
from palaestra.models.openai.endpoint import RemoteModel
from palaestra.models.openai.responses import OpenAIResponsesModel
from palaestra.models.openai.token_client import OpenAITokenModel

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
    run's first call); with the option ``token_mode``, the token-in/token-out client."""
    if config.options.get("token_mode") is True:
        if config.api == "responses":
            raise ConfigError(
                "model backend 'openai': token_mode sends token ids to /v1/completions, "
                "not api: responses (use api: chat or auto)"
            )
        return OpenAITokenModel(config, http=http)
    return _CLIENTS[config.api](config, http=http)
