"""Harbor task folders on disk: ``task.toml`` as typed data, the folder layout, a content digest.

A Harbor task is a folder (the format of the PyPI package ``harbor``; NeMo Gym, verifiers, SkyRL,
TRL and OpenEnv run it)::

    <task>/
      task.toml          metadata, timeouts, resources, network policy (``TaskConfig``)
      instruction.md     what the agent is told
      environment/       Dockerfile (and its context) of the machine the agent works in
      tests/test.sh      run after the agent in the same machine; writes
                         /logs/verifier/reward.txt (a number) or reward.json (named components)
      solution/solve.sh  optional: the oracle, a run of which must score 1

The models follow Harbor's own (``harbor.models.task.config``, schema 1.4): the same field names,
defaults and legacy spellings (``version`` for ``schema_version``, ``allow_internet``, ``memory``
and ``storage`` as "2G"). Harbor's model ignores a key it does not know, but its linter reports
it (``unknown-config-field``, on by default); a typo in a timeout silently running with the
default is worse than a refusal, so an unknown key here is refused, naming the file and key.
Sections palaestra does not interpret (``[[steps]]``, ``mcp_servers``, ``artifacts``,
``healthcheck``, ...) are known keys kept as read; a runner refuses what it cannot honour.

``folder_digest`` stamps rows: sha256 over every file's relative path, executable bit and
content, so a resumed run can refuse a task whose folder changed.
"""

from __future__ import annotations

import json
import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import pydantic

from palaestra.errors import ConfigError
from palaestra.sandbox.machines.digest import folder_digest as folder_digest

SCHEMA_VERSION = "1.4"
"""The ``schema_version`` palaestra writes (Harbor 0.26's)."""

CONFIG = "task.toml"
INSTRUCTION = "instruction.md"
ENVIRONMENT = "environment"
DOCKERFILE = "environment/Dockerfile"
TEST_SCRIPT = "tests/test.sh"
SOLVE_SCRIPT = "solution/solve.sh"
REWARD_TXT = "/logs/verifier/reward.txt"
REWARD_JSON = "/logs/verifier/reward.json"

NetworkMode = Literal["no-network", "public", "allowlist"]

_STRICT = pydantic.ConfigDict(extra="forbid", frozen=True)

Seconds = Annotated[float, pydantic.Field(gt=0, allow_inf_nan=False)]
"""A time budget: a finite number of seconds above 0 (a negative, zero, NaN or infinite budget
is refused at load, naming the field, not found out per rollout)."""
Megabytes = Annotated[int, pydantic.Field(gt=0)]


class _Network(pydantic.BaseModel):
    model_config = _STRICT

    network_mode: NetworkMode | None = None
    """An explicit policy for this phase; None: the environment's."""
    allowed_hosts: list[str] | None = None

    @pydantic.model_validator(mode="after")
    def _hosts_need_allowlist(self) -> _Network:
        if self.allowed_hosts is not None and self.network_mode != "allowlist":
            raise ValueError("allowed_hosts is only valid when network_mode = 'allowlist'")
        return self


class EnvironmentConfig(pydantic.BaseModel):
    """``[environment]``: the machine: its image, build budget, resources and network."""

    model_config = _STRICT

    build_timeout_sec: Seconds = 600.0
    docker_image: str | None = None
    """A pre-built image; then ``environment/Dockerfile`` is optional."""
    os: Literal["linux", "windows"] = "linux"
    cpus: int | float | None = None
    """Whole numbers kept as integers, as Harbor does (``2.0`` is ``2``)."""
    memory_mb: Megabytes | None = None
    storage_mb: Megabytes | None = None
    gpus: int | None = None
    gpu_types: list[str] | None = None
    tpu: dict[str, Any] | None = None
    mcp_servers: list[dict[str, Any]] = pydantic.Field(default_factory=list)
    env: dict[str, str] = pydantic.Field(default_factory=dict)
    skills_dir: str | None = None
    healthcheck: dict[str, Any] | None = None
    workdir: str | None = None
    network_mode: NetworkMode = "public"
    """Harbor's default is ``public``: a task that says nothing may use the network."""
    allowed_hosts: list[str] | None = None

    @pydantic.model_validator(mode="before")
    @classmethod
    def _legacy(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        allow = data.pop("allow_internet", None)
        if allow is not None and "network_mode" not in data and "allowed_hosts" not in data:
            data["network_mode"] = "public" if allow else "no-network"
        for legacy in ("memory", "storage"):
            if isinstance(data.get(legacy), str):
                data.setdefault(f"{legacy}_mb", _megabytes(data.pop(legacy)))
        if isinstance(data.get("os"), str):
            data["os"] = data["os"].lower()
        return data

    @pydantic.field_validator("cpus")
    @classmethod
    def _whole_cpus(cls, value: float | None) -> float | None:
        if value is not None and not (math.isfinite(value) and value > 0):
            raise ValueError("must be a finite number of CPUs above 0")
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value

    @pydantic.model_validator(mode="after")
    def _hosts_need_allowlist(self) -> EnvironmentConfig:
        if self.allowed_hosts is not None and self.network_mode != "allowlist":
            raise ValueError("allowed_hosts is only valid when network_mode = 'allowlist'")
        return self


class VerifierConfig(_Network):
    """``[verifier]``: how long ``tests/test.sh`` may run, as whom, in which machine."""

    timeout_sec: Seconds = 600.0
    env: dict[str, str] = pydantic.Field(default_factory=dict)
    user: str | int | None = None
    environment_mode: Literal["shared", "separate"] | None = None
    """``shared`` (the default without ``environment``): the tests run in the agent's machine."""
    environment: EnvironmentConfig | None = None
    collect: list[dict[str, Any]] = pydantic.Field(default_factory=list)


class AgentConfig(_Network):
    """``[agent]``: the agent's time budget and user."""

    timeout_sec: Seconds | None = None
    user: str | int | None = None


class SolutionConfig(pydantic.BaseModel):
    """``[solution]``: environment variables of the oracle's run."""

    model_config = _STRICT

    env: dict[str, str] = pydantic.Field(default_factory=dict)


class Author(pydantic.BaseModel):
    model_config = _STRICT

    name: str
    email: str | None = None


class PackageInfo(pydantic.BaseModel):
    """``[task]``: the task's name in a registry (``org/name``)."""

    model_config = _STRICT

    name: str = pydantic.Field(pattern=r"^[A-Za-z0-9_-][A-Za-z0-9._-]*/[A-Za-z0-9_.-]+$")
    version: str | None = pydantic.Field(default=None, min_length=1)
    description: str = ""
    authors: list[Author] = pydantic.Field(default_factory=list)
    keywords: list[str] = pydantic.Field(default_factory=list)


class TaskConfig(pydantic.BaseModel):
    """A whole ``task.toml``. ``metadata`` is free-form (Harbor's convention: ``author_name``,
    ``difficulty``, ``category``, ``tags``)."""

    model_config = _STRICT

    schema_version: str = SCHEMA_VERSION
    task: PackageInfo | None = None
    metadata: dict[str, Any] = pydantic.Field(default_factory=dict)
    verifier: VerifierConfig = pydantic.Field(default_factory=VerifierConfig)
    agent: AgentConfig = pydantic.Field(default_factory=AgentConfig)
    environment: EnvironmentConfig = pydantic.Field(default_factory=EnvironmentConfig)
    solution: SolutionConfig = pydantic.Field(default_factory=SolutionConfig)
    source: str | None = None
    multi_step_reward_strategy: Literal["mean", "final"] | None = None
    steps: list[dict[str, Any]] | None = None
    artifacts: list[str | dict[str, Any]] = pydantic.Field(default_factory=list)

    @pydantic.model_validator(mode="before")
    @classmethod
    def _version_rename(cls, data: Any) -> Any:
        if isinstance(data, dict) and "version" in data:
            data = dict(data)
            data.setdefault("schema_version", data.pop("version"))
        return data


def _megabytes(size: str) -> int:
    text = size.strip().upper()
    scale = {"G": 1024.0, "M": 1.0, "K": 1 / 1024}.get(text[-1:])
    if scale is None:
        raise ValueError(f"size {size!r} is not like '2G' or '512M'")
    return int(float(text[:-1]) * scale)


def parse_config(text: str, where: str) -> TaskConfig:
    """``text`` (a task.toml) as a ``TaskConfig``; a one-line ``ConfigError`` naming ``where``
    and the field otherwise."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{where}: not valid TOML: {error}") from None
    try:
        return TaskConfig.model_validate(data)
    except pydantic.ValidationError as error:
        raise ConfigError(f"{where}: {_describe(error)}") from None


def _describe(error: pydantic.ValidationError) -> str:
    first = error.errors(include_url=False)[0]
    location = ".".join(str(part) for part in first["loc"] if part != "function-after")
    if first["type"] == "extra_forbidden":
        return f"unknown key '{location}' (Harbor's task.toml has no such field)"
    message = first["msg"].removeprefix("Value error, ")
    value = first.get("input")
    if isinstance(value, int | float | str) and not isinstance(value, bool) and location:
        location = f"{location} = {value!r}"
    return f"{location}: {message}" if location else message


@dataclass(frozen=True)
class HarborTask:
    """One task folder, read and checked."""

    path: Path
    config: TaskConfig
    instruction: str
    digest: str
    """``folder_digest(path)`` when read."""
    has_solution: bool

    @property
    def name(self) -> str:
        """The registry name when ``[task]`` gives one, else the folder's name."""
        return self.config.task.name if self.config.task is not None else self.path.name


def read_task(folder: str | os.PathLike[str]) -> HarborTask:
    """The task folder at ``folder``; a one-line ``ConfigError`` naming the folder, file and
    field when it is not a runnable Harbor task."""
    path = Path(folder)
    if not path.is_dir():
        raise ConfigError(f"{path}: not a Harbor task folder (no such directory)")
    config_path = path / CONFIG
    if not config_path.is_file():
        raise ConfigError(f"{path}: not a Harbor task folder: no {CONFIG}")
    config = parse_config(config_path.read_text(encoding="utf-8"), str(config_path))
    if config.steps:
        raise ConfigError(f"{config_path}: steps: multi-step tasks are not supported")
    instruction_path = path / INSTRUCTION
    if not instruction_path.is_file():
        raise ConfigError(f"{path}: missing {INSTRUCTION} (what the agent is told)")
    instruction = instruction_path.read_text(encoding="utf-8")
    if not instruction.strip():
        raise ConfigError(f"{instruction_path}: empty: describe the agent's task")
    if config.environment.docker_image is None and not (path / DOCKERFILE).is_file():
        raise ConfigError(f"{path}: missing {DOCKERFILE} (or environment.docker_image in {CONFIG})")
    if not (path / TEST_SCRIPT).is_file():
        raise ConfigError(f"{path}: missing {TEST_SCRIPT} (the verifier, which writes the reward)")
    return HarborTask(
        path=path,
        config=config,
        instruction=instruction,
        digest=folder_digest(path),
        has_solution=(path / SOLVE_SCRIPT).is_file(),
    )


def read_tasks(root: str | os.PathLike[str]) -> list[HarborTask]:
    """One task folder, or every task folder in ``root`` (sorted by name; hidden folders
    skipped); a one-line ``ConfigError`` at the first bad one."""
    path = Path(root)
    if (path / CONFIG).is_file():
        return [read_task(path)]
    if not path.is_dir():
        raise ConfigError(f"{path}: no such directory of Harbor task folders")
    folders = sorted(
        child for child in path.iterdir() if child.is_dir() and not child.name.startswith(".")
    )
    if not folders:
        raise ConfigError(f"{path}: neither a Harbor task folder ({CONFIG}) nor a folder of them")
    return [read_task(folder) for folder in folders]


@dataclass(frozen=True)
class TaskFolder:
    """A task folder to write: what goes in each file."""

    config: TaskConfig
    instruction: str
    dockerfile: str
    test_script: str
    tests: Mapping[str, str] = field(default_factory=dict)
    """Other files of ``tests/`` (name to text): what ``test.sh`` reads."""
    solve_script: str | None = None


def write_task(folder: TaskFolder, path: str | os.PathLike[str]) -> Path:
    """Write ``folder`` at ``path`` (which must not exist yet); the path."""
    root = Path(path)
    root.mkdir(parents=True)
    (root / CONFIG).write_text(dump_config(folder.config), encoding="utf-8")
    (root / INSTRUCTION).write_text(folder.instruction, encoding="utf-8")
    (root / ENVIRONMENT).mkdir()
    (root / DOCKERFILE).write_text(folder.dockerfile, encoding="utf-8")
    (root / "tests").mkdir()
    _script(root / TEST_SCRIPT, folder.test_script)
    for name, text in sorted(folder.tests.items()):
        (root / "tests" / name).write_text(text, encoding="utf-8")
    if folder.solve_script is not None:
        (root / "solution").mkdir()
        _script(root / SOLVE_SCRIPT, folder.solve_script)
    return root


def _script(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755)


def dump_config(config: TaskConfig) -> str:
    """``config`` as task.toml text: the fields that differ from Harbor's defaults, plus
    ``schema_version`` and the timeouts (written out so a reader sees the budgets)."""
    data = {
        "schema_version": config.schema_version,
        **config.model_dump(mode="json", exclude_defaults=True),
    }
    data.setdefault("verifier", {})["timeout_sec"] = config.verifier.timeout_sec
    data.setdefault("environment", {})["build_timeout_sec"] = config.environment.build_timeout_sec
    lines: list[str] = []
    tables: list[tuple[str, dict[str, Any]]] = []
    for key, value in data.items():
        if isinstance(value, dict):
            tables.append((key, value))
        else:
            lines.append(f"{key} = {_toml_value(value)}")
    while tables:
        name, table = tables.pop(0)
        lines.append(f"\n[{name}]")
        for key, value in table.items():
            if isinstance(value, dict):
                tables.insert(0, (f"{name}.{key}", value))
            elif value is not None:
                lines.append(f"{_toml_key(key)} = {_toml_value(value)}")
    return "\n".join(lines).lstrip("\n") + "\n"


def _toml_key(key: str) -> str:
    bare = key.replace("_", "").replace("-", "").isalnum() and key.isascii()
    return key if bare else json.dumps(key)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        items = ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items())
        return "{ " + items + " }"
    raise TypeError(f"cannot write {type(value).__name__} to task.toml")
