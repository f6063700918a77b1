"""Turn what a user wrote (``local``, a URL, or a name from a model config file) into a Model.

The config file is YAML, one entry per name::

    gpt:
      url: https://api.openai.com/v1
      api: responses          # responses | chat | auto (default auto)
      model: gpt-4.1-mini
      api_key_env: OPENAI_API_KEY
    vllm: http://gpu-box:8000/v1   # a bare URL is fine too
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal, cast, get_args

from palaestra.errors import ConfigError
from palaestra.models.auto_api import AutoApiModel
from palaestra.models.base import Model
from palaestra.models.http import RetryPolicy, Timeouts
from palaestra.models.openai_chat import OpenAIChatModel
from palaestra.models.openai_responses import OpenAIResponsesModel
from palaestra.transport import HttpClient

Api = Literal["auto", "responses", "chat"]
DEFAULT_CONFIG_PATH = Path("palaestra_models.yaml")
_ENTRY_KEYS = frozenset({"url", "api", "model", "api_key_env"})


def _checked_api(api: Any, where: str) -> Api:
    if api not in get_args(Api):
        raise ConfigError(f"{where}: api must be one of auto, responses, chat, not {api!r}")
    return cast(Api, api)


def remote_model(
    url: str,
    *,
    api: Api = "auto",
    model_name: str | None = None,
    api_key: str | None = None,
    http: HttpClient | None = None,
    retry: RetryPolicy | None = None,
    timeouts: Timeouts | None = None,
) -> Model:
    """A client for an OpenAI-compatible base URL speaking ``api``."""
    if api == "responses":
        return OpenAIResponsesModel(
            url, model=model_name, api_key=api_key, http=http, timeouts=timeouts, retry=retry
        )
    if api == "chat":
        return OpenAIChatModel(
            url, model=model_name, api_key=api_key, http=http, timeouts=timeouts, retry=retry
        )
    return AutoApiModel(
        url, model=model_name, api_key=api_key, http=http, timeouts=timeouts, retry=retry
    )


def _load_config(path: Path) -> dict[str, Any]:
    import yaml  # only a run that names a model from the config file pays for PyYAML

    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read model config {path}: {exc}") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(f"model config {path} must map model names to entries")
    return {str(name): entry for name, entry in loaded.items()}


def _entry(name: str, raw: Any, path: Path) -> dict[str, Any]:
    """A config entry as a dict with a ``url``; a bare string is the URL."""
    entry: Any = {"url": raw} if isinstance(raw, str) else raw
    where = f"{path}: model '{name}'"
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be a URL or a mapping with 'url'")
    unknown = sorted(set(entry) - _ENTRY_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown keys {unknown} (known: {sorted(_ENTRY_KEYS)})")
    url = entry.get("url")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ConfigError(f"{where}: 'url' must be an http(s) URL, not {url!r}")
    if not isinstance(entry.get("model", ""), str):
        raise ConfigError(f"{where}: 'model' must be a string")
    return entry


def _api_key_from(entry: dict[str, Any], where: str) -> str | None:
    variable = entry.get("api_key_env")
    if variable is None:
        return None
    # The user named this variable in their config file: reading it is their explicit choice.
    key = os.environ.get(str(variable))
    if not key:
        raise ConfigError(f"{where}: environment variable {variable} (api_key_env) is not set")
    return key


def open_model(
    spec: str,
    *,
    api: Api = "auto",
    model_name: str | None = None,
    api_key: str | None = None,
    http: HttpClient | None = None,
    config_path: Path | None = None,
    retry: RetryPolicy | None = None,
    timeouts: Timeouts | None = None,
) -> Model:
    """``local`` (the embedded model), an http(s) base URL, or a name from the model config.

    Arguments given here win over the config entry; ``api="auto"`` defers to the entry.
    """
    api = _checked_api(api, "open_model")
    if spec == "local":
        from palaestra.models.local import LocalModel  # llama.cpp is heavy: only when asked

        return LocalModel()
    if spec.startswith(("http://", "https://")):
        return remote_model(
            spec,
            api=api,
            model_name=model_name,
            api_key=api_key,
            http=http,
            retry=retry,
            timeouts=timeouts,
        )
    path = config_path or DEFAULT_CONFIG_PATH
    if not path.is_file():
        explicitly = "" if config_path is None else "given "
        raise ConfigError(
            f"unknown model '{spec}': not 'local', not an http(s) URL, and the {explicitly}"
            f"model config {path} does not exist"
        )
    config = _load_config(path)
    if spec not in config:
        known = ", ".join(sorted(config)) or "none"
        raise ConfigError(
            f"unknown model '{spec}': not 'local', not an http(s) URL, and not a name in "
            f"{path} (known: {known})"
        )
    where = f"{path}: model '{spec}'"
    entry = _entry(spec, config[spec], path)
    entry_api = _checked_api(entry.get("api", "auto"), where)
    return remote_model(
        entry["url"],
        api=api if api != "auto" else entry_api,
        model_name=model_name or entry.get("model"),
        api_key=api_key or _api_key_from(entry, where),
        http=http,
        retry=retry,
        timeouts=timeouts,
    )
