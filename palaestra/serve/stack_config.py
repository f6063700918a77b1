"""The stack file of ``palaestra run``: which servers to start and how they connect.

```yaml
host: 127.0.0.1                 # optional; every server binds here
servers:
  weather_env:   {kind: env, env: weather}
  smollm:        {kind: model, backend: local}
  weather_agent: {kind: agent, env: weather_env, model: smollm, max_steps: 8}
```

An agent's ``env`` and ``model`` name other servers of the stack (or, for ``env``, an
environment to run inside the agent; for ``model``, a URL). Secrets never live here: the
bearer token comes from ``PALAESTRA_SERVER_TOKEN`` or from ``env.yaml`` beside the stack file.
"""

from __future__ import annotations

from collections.abc import Sequence
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


def _check_references(config: StackConfig, path: Path) -> None:
    for name, spec in config.servers.items():
        if spec.kind == "env" and not spec.env:
            raise ConfigError(
                f"{path}: field 'servers.{name}.env': an env server needs an environment name"
            )
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
