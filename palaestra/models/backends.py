"""Model backends: the registry that turns a ``ModelConfig`` into a ``Model``.

A backend is any callable ``(config, *, http=None) -> Model`` (a class whose constructor has
that shape is one). The built-ins are ``openai`` (any OpenAI-compatible server) and ``local``
(the embedded llama.cpp model); an installed package adds its own under the entry-point group
``palaestra.models``::

    [project.entry-points."palaestra.models"]
    anthropic = "my_package.backend:AnthropicModel"

``build_model`` is called once per run: nothing here is on the per-request path.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from palaestra._util.plugins import Registry, callable_plugin
from palaestra.errors import ConfigError, PalaestraError
from palaestra.models.base import Model, ModelBackend

if TYPE_CHECKING:
    from palaestra.spec import ModelConfig
    from palaestra.transport import HttpClient

MODEL_BACKEND_GROUP = "palaestra.models"
"""The entry-point group a package registers its model backends under."""


MODEL_BACKENDS: Registry[ModelBackend] = Registry(
    "model backend",
    MODEL_BACKEND_GROUP,
    {
        "openai": "palaestra.models.openai.backend:openai_backend",
        "local": "palaestra.models.local.model:LocalModel.from_config",
    },
    callable_plugin("a model backend (a callable taking a ModelConfig and returning a Model)"),
)
"""Every model backend by name: the built-ins (imported only when used) and the plug-ins."""


def build_model(config: ModelConfig, *, http: HttpClient | None = None) -> Model:
    """The model ``config`` describes, built by its backend (``config.backend``).

    ``http`` is an HTTP client to borrow (several models may share one; the model never closes
    it); without one a remote model owns its own. An unknown backend, a plug-in that fails to
    load, or one that builds something that is not a ``Model`` is a one-line ``ConfigError``.
    Two or more ``config.urls`` build a ``palaestra.models.pool.ModelPool``: one model of the
    backend per URL, sharing ``http``.
    """
    if config.urls:
        from palaestra.models.pool import ModelPool

        return ModelPool(config, http=http)
    plugin = MODEL_BACKENDS.load(config.backend)
    where = f"model backend '{plugin.name}' ({plugin.source})"
    try:
        model = plugin.value(config, http=http)
    except PalaestraError:
        raise
    except Exception as error:  # a plug-in's own bug is one line, whatever it raised
        detail = " ".join(str(error).split())
        raise ConfigError(f"{where} failed: {type(error).__name__}: {detail}") from None
    if not isinstance(model, Model):
        raise ConfigError(
            f"{where} built a {type(model).__name__}, which is not a Model "
            "(name, stats, respond, check, aclose)"
        )
    return model


def read_api_key(config: ModelConfig) -> str | None:
    """The API key: ``config.api_key``, else the environment variable ``config.api_key_env``.

    Read when the model is built, never saved. A variable that was named but is unset (or
    empty) is a ``ConfigError``: the user asked for a key, so running without one would only
    fail later as a 401 on every request.
    """
    if config.api_key:
        return config.api_key
    variable = config.api_key_env
    if variable is None:
        return None
    key = os.environ.get(variable)
    if not key:
        raise ConfigError(f"environment variable {variable} (api_key_env) is not set")
    return key


def backend_options(config: ModelConfig, known: Mapping[str, tuple[type, ...]]) -> dict[str, Any]:
    """``config.options`` checked against the names and types a backend accepts.

    An unknown name or a value of the wrong type is a one-line ``ConfigError`` naming the
    backend and the options it knows (a ``bool`` is not accepted where only ``int`` is).
    """
    where = f"model backend '{config.backend}'"
    for name, value in config.options.items():
        if name not in known:
            listed = ", ".join(sorted(known)) or "none"
            raise ConfigError(f"{where}: unknown option '{name}' (known: {listed})")
        types = known[name]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            wanted = " or ".join("null" if t is type(None) else t.__name__ for t in types)
            raise ConfigError(f"{where}: option '{name}' must be {wanted}, not {value!r}")
    return dict(config.options)
