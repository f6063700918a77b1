"""The stack file of ``palaestra run``: which servers to start and how they connect.

```yaml
host: 127.0.0.1                 # optional; every server binds here
servers:
  weather_env:   {kind: env, env: weather, args: {}, max_sessions: 4096}
  smollm:        {kind: model, backend: local, model_options: {n_ctx: 8192}}
  weather_agent: {kind: agent, env: weather_env, model: smollm, agent: tool_calling,
                  options: {max_steps: 8}}
```

An agent's ``env`` and ``model`` name other servers of the stack (or, for ``env``, an
environment to run inside the agent; for ``model``, ``local``, a URL or a name from
``palaestra_models.yaml``). An env server (or an agent running its environment inside) may name
a ``user_model`` the same way: the model that plays the environment's simulated user (``serve
env --user-model``); a model server it names is started first. A name that is none of these is
refused at load time, naming the field and the servers of that kind it could mean. ``agent`` is
any agent, built-in or plug-in, and ``options`` its keyword arguments (``max_steps`` and
``max_calls_per_turn`` may also be given beside it); ``args`` are the environment's constructor
arguments. A key that does not apply to a server's kind is refused, naming it. Secrets never
live here: the bearer token comes from ``PALAESTRA_SERVER_TOKEN`` or from ``env.yaml`` beside
the stack file.

Each server is started from a ``ServeSpec`` (``serve_spec``): the same specification
``palaestra serve`` builds from its flags, so a stack server and a hand-started one agree.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from difflib import get_close_matches
from pathlib import Path
from typing import Any, Literal

import pydantic
import yaml

from palaestra._util.yaml_files import load_yaml
from palaestra.errors import ConfigError
from palaestra.spec import AgentSpec, EnvSpec, ModelConfig, ServeSpec, validated


class ServerSpec(pydantic.BaseModel):
    """One server of a stack file, as written (``serve_spec`` makes it a ``ServeSpec``)."""

    model_config = pydantic.ConfigDict(extra="forbid")

    kind: Literal["env", "model", "agent"]
    port: int = pydantic.Field(default=0, ge=0, le=65535)
    env: str | None = None
    """env: the environment to serve; agent: an env server of the stack, or an environment
    to run inside the agent."""
    args: dict[str, Any] = pydantic.Field(default_factory=dict)
    """The environment's constructor arguments (``--env-arg``)."""
    cmd: str | None = None
    """env: instead of ``env``, a shell command that starts an environment server (e.g.
    ``nel serve``) on ``{port}`` / ``$PORT``; it is stopped with the stack
    (``palaestra.remote.managed``)."""
    tasks: Path | None = None
    max_sessions: int | None = pydantic.Field(default=None, ge=0)
    """An env server's cap on live sessions (``serve env --max-sessions``; 0 lifts it)."""
    max_task_bytes: int | None = pydantic.Field(default=None, ge=0)
    """An env server's cap on a seeded task's size (``serve env --max-task-bytes``)."""
    max_total_task_bytes: int | None = pydantic.Field(default=None, ge=0)
    """An env server's cap on its live sessions' tasks together (``--max-total-task-bytes``)."""
    backend: str | list[str] = "local"
    """model: what to serve: ``local``, a URL, a ``palaestra_models.yaml`` name, a backend;
    or a list of base URLs of one model's replicas (a pool, ``palaestra.models.pool``)."""
    model_id: str | None = None
    model: str | list[str] | None = None
    """agent: a model server of the stack, or ``local``, a URL or a configured name; or a list
    of base URLs of one model's replicas (a pool)."""
    model_name: str | None = None
    api: Literal["auto", "responses", "chat"] | None = None
    api_key_env: str | None = None
    """The variable holding the model's key (default ``OPENAI_API_KEY`` when it is set; the
    stack's token for a model server of the stack)."""
    max_retries: int | None = pydantic.Field(default=None, ge=0)
    request_timeout: float | None = pydantic.Field(default=None, gt=0)
    model_options: dict[str, Any] = pydantic.Field(default_factory=dict)
    """The model backend's options (e.g. ``n_ctx`` of the local model)."""
    agent: str | None = None
    """Any agent, built-in or plug-in (default: the environment's own)."""
    options: dict[str, Any] = pydantic.Field(default_factory=dict)
    """The agent's keyword arguments."""
    max_steps: int | None = pydantic.Field(default=None, ge=1)
    max_calls_per_turn: int | None = pydantic.Field(default=None, ge=1)
    hosted_tools: bool = False
    """agent: send provider-hosted tools a task names even when the environment declares no
    network (``serve agent --hosted-tools``); default: closed-book."""
    user_model: str | list[str] | None = None
    """env (or agent, running its environment inside): the model of the environment's
    simulated user: a model server of the stack, ``local``, a URL or a configured name; or a
    list of base URLs of one model's replicas."""

    def agent_options(self) -> dict[str, Any]:
        """``options`` with ``max_steps`` / ``max_calls_per_turn`` given beside them."""
        shorthand = {"max_steps": self.max_steps, "max_calls_per_turn": self.max_calls_per_turn}
        return {**self.options, **{k: v for k, v in shorthand.items() if v is not None}}


_MODEL_KEYS = frozenset(
    {"model_name", "api", "api_key_env", "max_retries", "request_timeout", "model_options"}
)
_KEYS = {
    "env": frozenset(
        {
            "env",
            "args",
            "cmd",
            "tasks",
            "max_sessions",
            "max_task_bytes",
            "max_total_task_bytes",
            "user_model",
        }
    ),
    "model": _MODEL_KEYS | {"backend", "model_id"},
    "agent": _MODEL_KEYS
    | {"env", "args", "model", "agent", "options", "max_steps", "max_calls_per_turn"}
    | {"user_model", "hosted_tools"},
}
"""The keys each kind of server takes (besides ``kind`` and ``port``)."""


class StackConfig(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    head_port: int = pydantic.Field(default=0, ge=0, le=65535)
    servers: dict[str, ServerSpec]

    def start_order(self) -> list[str]:
        """Environments and models first, then the agents that use them; an environment
        whose user model is a model server of the stack after the model servers."""

        def rank(name: str) -> int:
            server = self.servers[name]
            if server.kind == "agent":
                return 2
            user = server.user_model
            return int(server.kind == "env" and isinstance(user, str) and user in self.servers)

        return sorted(self.servers, key=rank)

    def serve_spec(
        self, name: str, urls: Mapping[str, str], *, token: str | None, environ: Mapping[str, str]
    ) -> ServeSpec:
        """The ``ServeSpec`` of server ``name``; ``urls`` are the started servers' addresses.

        An agent's link to a model server of the stack carries the stack's token as its key
        (read from ``PALAESTRA_SERVER_TOKEN`` in the agent's environment, never written).
        """
        server = self.servers[name]
        where: dict[str, Any] = {"host": self.host, "port": server.port}
        user_model = _user_model(server, urls, token, environ)
        if server.kind == "env":
            return ServeSpec(
                kind="env",
                env=EnvSpec(name=server.env, args=server.args, cmd=server.cmd),
                tasks=server.tasks,
                max_sessions=server.max_sessions,
                max_task_bytes=server.max_task_bytes,
                max_total_task_bytes=server.max_total_task_bytes,
                user_model=user_model,
                **where,
            )
        if server.kind == "model":
            model = _model(server, server.backend, None, environ)
            return ServeSpec(kind="model", model=model, model_id=server.model_id, **where)
        env_url = urls.get(server.env or "")
        model_url = urls.get(server.model or "") if not isinstance(server.model, list) else None
        env = EnvSpec(url=env_url) if env_url else EnvSpec(name=server.env, args=server.args)
        if model_url:
            key = "PALAESTRA_SERVER_TOKEN" if token else None
            model = _model(server, f"{model_url}/v1", key, {})
        else:
            model = _model(server, server.model or "local", None, environ)
        agent = AgentSpec(name=server.agent, options=server.agent_options())
        return ServeSpec(
            kind="agent",
            env=env,
            model=model,
            agent=agent,
            user_model=user_model,
            hosted_tools=server.hosted_tools,
            **where,
        )


def load_stack(path: Path, overrides: Sequence[str] = ()) -> StackConfig:
    """Read and check a stack file; a ``ConfigError`` names the file and the field (and the
    line, for a key given twice or a stack with no server: one would run forever).

    ``overrides`` are ``dotted.key=value`` strings (the value read as YAML) applied on top,
    e.g. ``servers.agent.max_steps=4`` or ``host=0.0.0.0``.
    """
    try:
        loaded = load_yaml(path.read_text(encoding="utf-8"), str(path))
    except OSError as error:
        raise ConfigError(f"cannot read stack file {path}: {error.strerror}") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML: {error}") from None
    raw = loaded.value
    for override in overrides:
        raw = apply_override(raw, override)
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: a stack file is a mapping with 'servers'")
    if "servers" in raw and not raw["servers"]:
        line = f":{loaded.lines['servers']}" if "servers" in loaded.lines else ""
        raise ConfigError(
            f"{path}{line}: field 'servers': no server to run; a stack names at least one"
        )
    _check_model_options(raw, path)
    config = validated(StackConfig, raw, str(path))
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


def _model(
    server: ServerSpec, spec: str | list[str], key_env: str | None, environ: Mapping[str, str]
) -> ModelConfig:
    """The model a server serves or calls; its key from ``key_env``, else the entry's
    ``api_key_env``, else ``OPENAI_API_KEY`` when it is set."""
    from palaestra.models.resolve import model_config

    config = model_config(
        spec,
        api=server.api,
        model_name=server.model_name,
        api_key_env=key_env or server.api_key_env,
        max_retries=server.max_retries,
        request_timeout=server.request_timeout,
        options=server.model_options or None,
    )
    if config.api_key_env is None and environ.get("OPENAI_API_KEY"):
        config = config.model_copy(update={"api_key_env": "OPENAI_API_KEY"})
    return config


def _user_model(
    server: ServerSpec, urls: Mapping[str, str], token: str | None, environ: Mapping[str, str]
) -> ModelConfig | None:
    """The user model a server names: a model server of the stack (reached with the stack's
    token), else resolved as ``--user-model`` is; None when it names none."""
    from palaestra.models.resolve import model_config

    named = server.user_model
    if named is None:
        return None
    url = urls.get(named) if isinstance(named, str) else None
    if url:
        key = "PALAESTRA_SERVER_TOKEN" if token else None
        return model_config(f"{url}/v1", api_key_env=key)
    config = model_config(named)
    if config.api_key_env is None and environ.get("OPENAI_API_KEY"):
        config = config.model_copy(update={"api_key_env": "OPENAI_API_KEY"})
    return config


_OUTSIDE = {
    "env": "a known environment (see `palaestra envs`), a ./file.py or a module:Class",
    "model": "'local', an http(s) URL or a name in palaestra_models.yaml",
}


SERVER_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}")
"""A server's name: it names its log and spec files in the log directory, so it is an
identifier (no path separator, not starting with a dot), at most 128 characters."""


def _check_names(config: StackConfig, path: Path) -> None:
    for name in config.servers:
        if not SERVER_NAME.fullmatch(name):
            raise ConfigError(
                f"{path}: key {name!r} under 'servers': a server name is letters, digits, '_', '-' "
                "and '.' (not first), at most 128 characters"
            )


def _check_references(config: StackConfig, path: Path) -> None:
    _check_names(config, path)
    for name, spec in config.servers.items():
        if spec.kind == "env" and not spec.env and not spec.cmd:
            raise ConfigError(
                f"{path}: field 'servers.{name}.env': an env server needs an environment name "
                f"(or a cmd that starts one)"
            )
        if spec.kind == "env" and spec.env and spec.cmd:
            raise ConfigError(
                f"{path}: field 'servers.{name}.cmd': an env server serves env or runs cmd, "
                f"not both"
            )
        for key in sorted(spec.model_fields_set - _KEYS[spec.kind] - {"kind", "port"}):
            takers = " and ".join(f"{kind} servers" for kind, keys in _KEYS.items() if key in keys)
            raise ConfigError(f"{path}: field 'servers.{name}.{key}': only {takers} take it")
        if spec.kind == "model" and isinstance(spec.backend, list):
            _check_pool(spec.backend, f"{path}: field 'servers.{name}.backend'")
        if spec.user_model is not None:
            _check_model_reference(
                config, spec.user_model, f"{path}: field 'servers.{name}.user_model'"
            )
        if spec.kind != "agent":
            continue
        if not spec.env:
            raise ConfigError(f"{path}: field 'servers.{name}.env': an agent needs an env")
        _check_agent(spec, f"{path}: field 'servers.{name}.agent'")
        for field, value in (("env", spec.env), ("model", spec.model)):
            if isinstance(value, list):  # a pool: the base URLs of one model's replicas
                _check_pool(value, f"{path}: field 'servers.{name}.{field}'")
                continue
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


def _check_model_reference(config: StackConfig, value: str | list[str], where: str) -> None:
    """A ``user_model``: a model server of the stack, or a model outside it that exists."""
    if isinstance(value, list):
        _check_pool(value, where)
        return
    target = config.servers.get(value)
    if target is not None and target.kind != "model":
        raise ConfigError(f"{where}: '{value}' is a {target.kind} server, not a model server")
    if target is None and not _outside("model", value):
        raise ConfigError(
            f"{where}: '{value}' is not a model server of this stack "
            f"({_could_mean(config, 'model', value)}), nor {_OUTSIDE['model']}"
        )


def _check_model_options(raw: dict[str, Any], path: Path) -> None:
    """A model backend's option written where a stack server takes none (``options:`` on a
    model server, ``token_mode:`` beside ``kind``) is refused pointing at ``model_options``."""
    servers = raw.get("servers")
    for name, server in servers.items() if isinstance(servers, dict) else ():
        if not isinstance(server, dict) or server.get("kind") not in ("model", "agent"):
            continue
        for key in server:
            where = f"{path}: field 'servers.{name}.{key}'"
            if key == "options" and server["kind"] == "model":
                raise ConfigError(
                    f"{where}: a model server takes no options; did you mean model_options? "
                    "(the model backend's options, e.g. model_options: {token_mode: true})"
                )
            if key not in ServerSpec.model_fields and key in _backend_option_names():
                raise ConfigError(
                    f"{where}: '{key}' is an option of the model backend; did you mean "
                    f"model_options? (model_options: {{{key}: ...}})"
                )


def _backend_option_names() -> frozenset[str]:
    """The options palaestra's model backends take (``model_options``'s keys)."""
    from palaestra.models.local.model import LocalModel
    from palaestra.models.openai.endpoint import RemoteModel

    return frozenset(RemoteModel.OPTIONS) | frozenset(LocalModel.OPTIONS)


def _check_pool(urls: list[str], where: str) -> None:
    for url in urls:
        if not url.startswith(("http://", "https://")):
            raise ConfigError(
                f"{where}: a list names the base URLs of one model's replicas, not {url!r}"
            )


def _check_agent(spec: ServerSpec, where: str) -> None:
    """A named agent exists and takes its options (built once here: agents are cheap)."""
    if spec.agent is None:
        return  # the environment's own, known once it runs; checked by the server
    from palaestra.agents.registry import make_agent

    try:
        make_agent(spec.agent, **spec.agent_options())
    except ConfigError as error:
        raise ConfigError(f"{where}: {error}") from None


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
    from palaestra.environment.finding.registry import environments

    return value.endswith(".py") or ":" in value or environments().has(value)


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
