"""Turn what a user wrote (a URL, a name from a model config file, or a backend name such as
``local``) into a ``ModelConfig``.

The config file is YAML, one entry per name. An entry's keys are ``ModelConfig`` fields (all
but ``api_key``: name the variable that holds the key with ``api_key_env``)::

    gpt:
      url: https://api.openai.com/v1
      api: responses          # responses | chat | auto (default auto)
      model: gpt-4.1-mini
      api_key_env: OPENAI_API_KEY
    vllm: http://gpu-box:8000/v1   # a bare URL is fine too
    replicas:                 # several endpoints of one model: a load-aware pool
      urls: [http://gpu-1:8000/v1, http://gpu-2:8000/v1]
      model: qwen3-8b
    replicas-short: [http://gpu-1:8000/v1, http://gpu-2:8000/v1]   # a bare list: the urls
    long-local:
      backend: local          # any model backend: openai (the default), local, or a plug-in's
      options: {n_ctx: 8192}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast, get_args

from palaestra.errors import ConfigError
from palaestra.models.backends import MODEL_BACKENDS, build_model
from palaestra.models.base import Model

if TYPE_CHECKING:
    from palaestra.models.openai.retry import RetryPolicy, Timeouts
    from palaestra.spec import ModelConfig
    from palaestra.transport import HttpClient

Api = Literal["auto", "responses", "chat"]
DEFAULT_CONFIG_PATH = Path("palaestra_models.yaml")
_SECRET = "api_key"

_URL_SCHEMES = ("http://", "https://", "http+unix://")
"""A model's base URL: over TCP, or a Unix socket (how a stack's agents reach its model servers)."""


def _checked_api(api: Any, where: str) -> Api:
    if api not in get_args(Api):
        raise ConfigError(f"{where}: api must be one of auto, responses, chat, not {api!r}")
    return cast(Api, api)


def _validated(fields: Mapping[str, Any], where: str) -> ModelConfig:
    """``fields`` as a ``ModelConfig``; the first thing wrong with them as one line."""
    import pydantic

    from palaestra.spec import SAMPLING_FIELDS, ModelConfig

    try:
        config = ModelConfig.model_validate(fields)
    except pydantic.ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise ConfigError(f"{where}: '{field}': {first['msg']}") from None
    unknown = sorted(set(config.sampling) - set(SAMPLING_FIELDS))
    if unknown:
        known = ", ".join(SAMPLING_FIELDS)
        raise ConfigError(f"{where}: sampling may set {known}, not {', '.join(unknown)}")
    if config.backend == "openai":
        urls: list[str | None] = [*config.urls] or [config.url]
        for url in urls:
            if not (url or "").startswith(_URL_SCHEMES):
                field = (
                    "'urls' must be http(s) URLs" if config.urls else "'url' must be an http(s) URL"
                )
                raise ConfigError(f"{where}: {field}, not {url!r}")
    return config


def _load_config(path: Path) -> dict[str, Any]:
    import yaml  # only a run with a model config file pays for PyYAML

    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        detail = " ".join(str(exc).split())
        raise ConfigError(f"cannot read model config {path}: {detail}") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(f"model config {path} must map model names to entries")
    return {str(name): entry for name, entry in loaded.items()}


def _entry(raw: Any, where: str) -> ModelConfig:
    """A config entry as a ``ModelConfig``; a bare string is the URL of an OpenAI server, a
    bare list the URLs of a pool of them."""
    from palaestra.spec import ModelConfig

    entry: Any = {"url": raw} if isinstance(raw, str) else raw
    if isinstance(raw, list) and all(isinstance(url, str) for url in raw):
        entry = {"urls": raw}
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be a URL, a list of URLs or a mapping with 'url'")
    if _SECRET in entry:
        raise ConfigError(f"{where}: name the variable that holds the key with api_key_env")
    known = sorted(set(ModelConfig.model_fields) - {_SECRET})
    unknown = sorted(str(key) for key in set(entry) - set(known))
    if unknown:
        raise ConfigError(f"{where}: unknown keys {unknown} (known: {known})")
    _checked_api(entry.get("api", "auto"), where)
    return _validated(entry, where)


def _named(spec: str, config_path: Path | None) -> ModelConfig:
    """A name: an entry of the model config file, else a model backend's own name."""
    path = config_path or DEFAULT_CONFIG_PATH
    if config_path is not None and not path.is_file():
        raise ConfigError(f"the given model config {path} does not exist")
    config = _load_config(path) if path.is_file() else {}
    if spec in config:
        return _entry(config[spec], f"{path}: model '{spec}'")
    if MODEL_BACKENDS.has(spec):
        return _validated({"backend": spec}, f"model '{spec}'")
    backends = ", ".join(f"'{name}'" for name in MODEL_BACKENDS.names())
    if path.is_file():
        names = ", ".join(sorted(config)) or "none"
        elsewhere = f"not a name in {path} (known: {names})"
    else:
        elsewhere = f"the model config {path} does not exist"
    raise ConfigError(
        f"unknown model '{spec}': not an http(s) URL, not a model backend ({backends}), "
        f"and {elsewhere}"
    )


def model_config(
    spec: str | Sequence[str],
    *,
    api: Api | None = None,
    model_name: str | None = None,
    api_key: str | None = None,
    api_key_env: str | None = None,
    config_path: Path | None = None,
    max_retries: int | None = None,
    request_timeout: float | None = None,
    sampling: Mapping[str, Any] | None = None,
    options: Mapping[str, Any] | None = None,
) -> ModelConfig:
    """The ``ModelConfig`` for what a user wrote as the model.

    ``spec`` is an http(s) base URL (the ``openai`` backend), a name in the model config file
    (``config_path``, default ``./palaestra_models.yaml``), or a model backend's name
    (``local``, or a plug-in's), tried in that order; or several base URLs of one model (a
    list: a pool, ``palaestra.models.pool``; a configured pool is one name whose entry has
    ``urls``). Arguments that are given win over the
    config entry (``api="auto"`` defers to it); ``sampling`` and ``options`` are merged into
    the entry's key by key. Anything wrong is one ``ConfigError`` line naming the file, entry
    and field. The key in ``api_key_env`` is read later, when the model is built.
    """
    if api is not None:
        _checked_api(api, "model")
    if not isinstance(spec, str) and len(spec) == 1:
        spec = spec[0]
    if not isinstance(spec, str):
        spec, base = _pool(list(spec))
    elif spec.startswith(_URL_SCHEMES):
        base = _validated({"url": spec}, f"model {spec}")
    else:
        base = _named(spec, config_path)
    given = {
        "api": None if api == "auto" else api,
        "model": model_name,
        "api_key": api_key,
        "api_key_env": api_key_env,
        "max_retries": max_retries,
        "request_timeout": request_timeout,
        "sampling": {**base.sampling, **sampling} if sampling else None,
        "options": {**base.options, **options} if options else None,
    }
    overrides = {field: value for field, value in given.items() if value is not None}
    if not overrides:
        return base
    return _validated({**base.model_dump(), **overrides}, f"model '{spec}'")


def _pool(specs: list[str]) -> tuple[str, ModelConfig]:
    """Several models given at once: the base URLs of one model's replicas, nothing else."""
    if not specs or not all(isinstance(spec, str) for spec in specs):
        raise ConfigError(f"model: expected a name, a URL or a list of URLs, not {specs!r}")
    for spec in specs:
        if not spec.startswith(_URL_SCHEMES):
            raise ConfigError(
                f"model '{spec}': several models must all be http(s) base URLs (the endpoints "
                "of one model); name a pool of them as one entry with 'urls' in the model config"
            )
    label = f"{specs[0]} (+{len(specs) - 1})"
    return label, _validated({"urls": specs}, f"models {', '.join(specs)}")


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
    """``build_model(model_config(spec, ...))``, with the retry policy and timeouts as objects.

    Kept for the callers that predate ``ModelConfig``; new code builds a config and calls
    ``build_model``.
    """
    config = model_config(
        spec,
        api=api,
        model_name=model_name,
        api_key=api_key,
        config_path=config_path,
        max_retries=retry.max_retries if retry else None,
        request_timeout=timeouts.read if timeouts else None,
    )
    tuning: dict[str, float] = {}
    if retry is not None:
        tuning.update(
            retry_delay=retry.base_delay,
            max_retry_delay=retry.max_delay,
            pause_deadline=retry.pause_deadline,
        )
    if timeouts is not None:
        tuning.update(connect_timeout=timeouts.connect)
    return build_model(config.model_copy(update=tuning) if tuning else config, http=http)
