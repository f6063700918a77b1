"""The stack file of ``palaestra run``: which servers to start and how they connect.

```yaml
host: 127.0.0.1                 # optional; every server binds here
servers:
  weather_env:   {kind: env, env: weather, max_sessions: 4096}
  smollm:        {kind: model, backend: local}
  weather_agent: {kind: agent, env: weather_env, model: smollm, max_steps: 8}
```

An agent's ``env`` and ``model`` name other servers of the stack (or, for ``env``, an
environment to run inside the agent; for ``model``, ``local``, a URL or a name from
``palaestra_models.yaml``). A name that is none of these is refused at load time, naming the
field and the servers of that kind it could mean. Secrets never live here: the bearer token
comes from ``PALAESTRA_SERVER_TOKEN`` or from ``env.yaml`` beside the stack file.
"""

from __future__ import annotations

from collections.abc import Sequence
from difflib import get_close_matches
from pathlib import Path
from typing import Any, Literal

import pydantic
import yaml

from palaestra.errors import ConfigError


class ServerSpec(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    kind: Literal["env", "model", "agent"]
    env: str | None = None
    backend: str = "local"
    model: str | None = None
    model_name: str | None = None
    agent: Literal["tool_calling", "single_turn"] = "tool_calling"
    max_steps: int = pydantic.Field(default=8, ge=1)
    port: int = pydantic.Field(default=0, ge=0, le=65535)
    max_sessions: int | None = pydantic.Field(default=None, ge=0)
    """An env server's cap on live sessions (``serve env --max-sessions``; 0 lifts it)."""
    max_task_bytes: int | None = pydantic.Field(default=None, ge=0)
    """An env server's cap on a seeded task's size (``serve env --max-task-bytes``)."""


class StackConfig(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    head_port: int = pydantic.Field(default=0, ge=0, le=65535)
    servers: dict[str, ServerSpec]

    def start_order(self) -> list[str]:
        """Environments and models first, then the agents that use them."""
        return sorted(self.servers, key=lambda name: self.servers[name].kind == "agent")


def load_stack(path: Path, overrides: Sequence[str] = ()) -> StackConfig:
    """Read and check a stack file; a ``ConfigError`` names the file and the field.

    ``overrides`` are ``dotted.key=value`` strings (the value read as YAML) applied on top,
    e.g. ``servers.agent.max_steps=4`` or ``host=0.0.0.0``.
    """
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(f"cannot read stack file {path}: {error.strerror}") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML: {error}") from None
    for override in overrides:
        raw = apply_override(raw, override)
    try:
        config = StackConfig.model_validate(raw)
    except pydantic.ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"{path}: field '{where}': {first['msg']}") from None
    _check_references(config, path)
    return config


def apply_override(raw: object, override: str) -> dict[str, Any]:
    """``raw`` with one ``dotted.key=value`` set (intermediate mappings are created)."""
    key, separator, value = override.partition("=")
    if not separator or not key.strip():
        raise ConfigError(f"--set {override!r}: expected dotted.key=value")
    root: dict[str, Any] = dict(raw) if isinstance(raw, dict) else {}
    node = root
    parts = key.strip().split(".")
    for part in parts[:-1]:
        child = node.get(part)
        node[part] = dict(child) if isinstance(child, dict) else {}
        node = node[part]
    try:
        node[parts[-1]] = yaml.safe_load(value)
    except yaml.YAMLError:
        raise ConfigError(f"--set {override!r}: the value is not valid YAML") from None
    return root


_ENV_ONLY = ("max_sessions", "max_task_bytes")
_OUTSIDE = {
    "env": "a known environment (see `palaestra envs`), a ./file.py or a module:Class",
    "model": "'local', an http(s) URL or a name in palaestra_models.yaml",
}


def _check_references(config: StackConfig, path: Path) -> None:
    for name, spec in config.servers.items():
        if spec.kind == "env" and not spec.env:
            raise ConfigError(
                f"{path}: field 'servers.{name}.env': an env server needs an environment name"
            )
        for key in _ENV_ONLY:
            if spec.kind != "env" and getattr(spec, key) is not None:
                raise ConfigError(f"{path}: field 'servers.{name}.{key}': only env servers take it")
        if spec.kind != "agent":
            continue
        if not spec.env:
            raise ConfigError(f"{path}: field 'servers.{name}.env': an agent needs an env")
        for field, value in (("env", spec.env), ("model", spec.model)):
            target = config.servers.get(value or "")
            if target is not None and target.kind != field:
                raise ConfigError(
                    f"{path}: field 'servers.{name}.{field}': '{value}' is a "
                    f"{target.kind} server, not a {field} server"
                )
            if target is None and value is not None and not _outside(field, value):
                raise ConfigError(
                    f"{path}: field 'servers.{name}.{field}': '{value}' is not a {field} "
                    f"server of this stack ({_could_mean(config, field, value)}), nor "
                    f"{_OUTSIDE[field]}"
                )


def _could_mean(config: StackConfig, kind: str, value: str) -> str:
    """The stack's servers of ``kind``, the closest to ``value`` first."""
    names = sorted(n for n, s in config.servers.items() if s.kind == kind)
    if not names:
        return f"it has no {kind} server"
    close = get_close_matches(value, names, n=3, cutoff=0.5)
    listed = ", ".join(f"'{n}'" for n in [*close, *(n for n in names if n not in close)])
    guess = f"did you mean '{close[0]}'? " if close else ""
    return f"{guess}its {kind} servers: {listed}"


def _outside(kind: str, value: str) -> bool:
    """Whether an agent's ``env``/``model`` names something outside the stack that exists."""
    if kind == "model":
        return value == "local" or value.startswith(("http://", "https://")) or _configured(value)
    from palaestra.registry import ENTRY_POINT_GROUP, builtin_names

    if value.endswith(".py") or ":" in value or value in builtin_names():
        return True
    from importlib import metadata

    return bool(metadata.entry_points(group=ENTRY_POINT_GROUP, name=value))


def _configured(name: str) -> bool:
    """Whether ``name`` is in the model config the agent will read (its cwd is ours)."""
    from palaestra.models.resolve import DEFAULT_CONFIG_PATH

    try:
        loaded = yaml.safe_load(DEFAULT_CONFIG_PATH.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return False  # no readable config: the name cannot be resolved by the agent either
    return isinstance(loaded, dict) and name in loaded


def load_token(stack_path: Path, environ: dict[str, str]) -> str | None:
    """The bearer token: ``PALAESTRA_SERVER_TOKEN``, else ``token`` in ``env.yaml`` beside."""
    if environ.get("PALAESTRA_SERVER_TOKEN"):
        return environ["PALAESTRA_SERVER_TOKEN"]
    secrets_file = stack_path.with_name("env.yaml")
    if not secrets_file.exists():
        return None
    try:
        loaded = yaml.safe_load(secrets_file.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError:
        raise ConfigError(f"{secrets_file}: not valid YAML") from None  # never echo secrets
    token = loaded.get("token") if isinstance(loaded, dict) else None
    return str(token) if token else None
