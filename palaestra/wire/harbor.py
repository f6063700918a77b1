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
Sections palaestra does not interpret (``[[steps]]``, ``artifacts``,
``healthcheck``, ...) are known keys kept as read; a runner refuses what it cannot honour.

``folder_digest`` stamps rows: sha256 over every file's relative path, executable bit and
content, so a resumed run can refuse a task whose folder changed. Reading a folder lists its
entries (refusing what ``folder_digest`` refuses) but hashes its files only when the task's
digest is first asked for: a folder of thousands of tasks is read without hashing them all.
"""

from __future__ import annotations

import ipaddress
import json
import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

import pydantic

from palaestra.errors import ConfigError
from palaestra.sandbox.machines.digest import folder_digest as folder_digest
from palaestra.sandbox.machines.digest import walk

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
STEPS = "steps"
MAIN_SERVICE = "main"
"""Harbor's name for the agent's machine among a task's services."""
ARTIFACTS_DIR = "/logs/artifacts"
"""Where the agent (or a collect hook) publishes files that go to the verifier and the row."""
AGENT_LOGS_DIR = "/logs/agent"
VERIFIER_LOGS = "/logs/verifier"

NetworkMode = Literal["no-network", "public", "allowlist"]

_STRICT = pydantic.ConfigDict(extra="forbid", frozen=True)

Seconds = Annotated[float, pydantic.Field(gt=0, allow_inf_nan=False)]
"""A time budget: a finite number of seconds above 0 (a negative, zero, NaN or infinite budget
is refused at load, naming the field, not found out per rollout)."""
Megabytes = Annotated[int, pydantic.Field(gt=0)]


_HOST_LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")


def allowed_host(entry: str) -> str:
    """An ``allowed_hosts`` entry in its normal form (lower case, no trailing dot, addresses
    compressed): a hostname, a ``*.``-prefixed hostname suffix, an IP address or a CIDR range;
    ``ValueError`` for anything else (a URL, a port, a path), as Harbor refuses it."""
    host = entry.strip().lower().rstrip(".")
    try:
        if "/" in host:
            return ipaddress.ip_network(host, strict=True).compressed
        return ipaddress.ip_address(host).compressed
    except ValueError:
        if "/" in host or ":" in host:
            raise ValueError(
                f"{entry!r} is not a hostname, an IP address or a CIDR range "
                "(no URLs, ports or paths)"
            ) from None
    name = host[2:] if host.startswith("*.") else host
    if not name or not all(_HOST_LABEL.match(label) for label in name.split(".")):
        raise ValueError(
            f"{entry!r} is not a hostname, a '*.'-prefixed hostname, an IP address or a CIDR range"
        )
    return host


def _allowed_hosts(hosts: list[str] | None) -> list[str] | None:
    return None if hosts is None else [allowed_host(host) for host in hosts]


class _Network(pydantic.BaseModel):
    model_config = _STRICT

    network_mode: NetworkMode | None = None
    """An explicit policy for this phase; None: the environment's."""
    allowed_hosts: list[str] | None = None

    _hosts = pydantic.field_validator("allowed_hosts")(_allowed_hosts)

    @pydantic.model_validator(mode="after")
    def _hosts_need_allowlist(self) -> _Network:
        if self.allowed_hosts is not None and self.network_mode != "allowlist":
            raise ValueError("allowed_hosts is only valid when network_mode = 'allowlist'")
        return self


class HealthcheckConfig(pydantic.BaseModel):
    """``[environment.healthcheck]`` (or a step's): a command run after the machine starts,
    before the agent, until it passes (Docker's HEALTHCHECK options)."""

    model_config = _STRICT

    command: str
    interval_sec: Seconds = 5.0
    timeout_sec: Seconds = 30.0
    start_period_sec: float = pydantic.Field(default=0.0, ge=0, allow_inf_nan=False)
    start_interval_sec: Seconds = 5.0
    retries: int = pydantic.Field(default=3, ge=1)


class CollectConfig(pydantic.BaseModel):
    """``[[verifier.collect]]``: a command run in a service after the agent's phase, before
    the artifacts are taken (it snapshots state into files a separate verifier reads)."""

    model_config = _STRICT

    command: str
    service: str = MAIN_SERVICE
    timeout_sec: Seconds = 60.0
    user: str | int | None = None


class ArtifactConfig(pydantic.BaseModel):
    """An ``artifacts`` entry as a table: a path in the machine kept after the trial."""

    model_config = _STRICT

    source: str
    destination: str | None = None
    exclude: list[str] = pydantic.Field(default_factory=list)
    service: str | None = None

    @pydantic.field_validator("source")
    @classmethod
    def _inside(cls, value: str) -> str:
        if any(part == ".." for part in value.split("/")):
            raise ValueError(f"an artifact's source must not contain '..': {value!r}")
        return value


Artifact = str | ArtifactConfig


class MCPServerConfig(pydantic.BaseModel):
    """An ``[[environment.mcp_servers]]`` entry: an MCP server whose tools the agent gets.
    ``stdio``: ``command`` and ``args`` started in the task's machine; ``sse`` (Harbor's
    default) and ``streamable-http`` (or ``http``): a server at ``url``."""

    model_config = _STRICT

    name: str = pydantic.Field(min_length=1)
    transport: Literal["stdio", "sse", "streamable-http"] = "sse"
    url: str | None = None
    command: str | None = None
    args: list[str] = pydantic.Field(default_factory=list)
    headers: dict[str, str] = pydantic.Field(default_factory=dict)

    @pydantic.field_validator("transport", mode="before")
    @classmethod
    def _http(cls, value: Any) -> Any:
        return "streamable-http" if value == "http" else value

    @pydantic.model_validator(mode="after")
    def _fields_of_transport(self) -> MCPServerConfig:
        if self.transport == "stdio" and not self.command:
            raise ValueError("'command' is required for transport 'stdio'")
        if self.transport != "stdio" and not self.url:
            raise ValueError(f"'url' is required for transport '{self.transport}'")
        if self.transport == "stdio" and self.headers:
            raise ValueError("'headers' is only for the HTTP transports")
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
    mcp_servers: list[MCPServerConfig] = pydantic.Field(default_factory=list)
    env: dict[str, str] = pydantic.Field(default_factory=dict)
    skills_dir: str | None = None
    healthcheck: HealthcheckConfig | None = None
    workdir: str | None = None
    network_mode: NetworkMode = "public"
    """Harbor's default is ``public``: a task that says nothing may use the network."""
    allowed_hosts: list[str] | None = None

    _hosts = pydantic.field_validator("allowed_hosts")(_allowed_hosts)

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
    """The separate verifier machine's ``[environment]`` (its presence implies ``separate``)."""
    collect: list[CollectConfig] = pydantic.Field(default_factory=list)

    @pydantic.model_validator(mode="after")
    def _mode_fits_environment(self) -> VerifierConfig:
        if self.environment_mode == "shared" and self.environment is not None:
            raise ValueError(
                "environment_mode = 'shared' conflicts with [verifier.environment] "
                "(omit it, or say 'separate')"
            )
        return self

    @property
    def separate(self) -> bool | None:
        """Whether this verifier runs in a machine of its own; None: not said here."""
        if self.environment_mode is not None:
            return self.environment_mode == "separate"
        return True if self.environment is not None else None


class AgentConfig(_Network):
    """``[agent]``: the agent's time budget and user."""

    timeout_sec: Seconds | None = None
    user: str | int | None = None


class SolutionConfig(pydantic.BaseModel):
    """``[solution]``: environment variables of the oracle's run."""

    model_config = _STRICT

    env: dict[str, str] = pydantic.Field(default_factory=dict)


class StepConfig(pydantic.BaseModel):
    """A ``[[steps]]`` entry: its folder ``steps/<name>/`` holds its ``instruction.md``, and
    its ``tests/`` and ``solution/`` when it has its own."""

    model_config = _STRICT

    name: str = pydantic.Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$")
    agent: AgentConfig = pydantic.Field(default_factory=AgentConfig)
    verifier: VerifierConfig = pydantic.Field(default_factory=VerifierConfig)
    min_reward: float | dict[str, float] | None = None
    """Below it (on ``reward``, or on each named key), the steps after this one are not run."""
    healthcheck: HealthcheckConfig | None = None
    artifacts: list[Artifact] = pydantic.Field(default_factory=list)


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
    steps: list[StepConfig] | None = None
    artifacts: list[Artifact] = pydantic.Field(default_factory=list)

    @pydantic.field_validator("steps")
    @classmethod
    def _unique_steps(cls, steps: list[StepConfig] | None) -> list[StepConfig] | None:
        seen: set[str] = set()
        for step in steps or []:
            if step.name.casefold() in seen:
                raise ValueError(f"two steps are named {step.name!r}")
            seen.add(step.name.casefold())
        return steps

    def separate_verifier(self, step: StepConfig | None = None) -> bool:
        """Whether the tests (of ``step``, or of the task) run in a machine of their own:
        the step's word, else the task's, else shared (Harbor's rule)."""
        said = step.verifier.separate if step is not None else None
        if said is None:
            said = self.verifier.separate
        return bool(said)

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
class HarborStep:
    """One step of a multi-step task: its config and instruction, and the folders its tests
    and oracle come from (its own under ``steps/<name>/``, else the task's)."""

    config: StepConfig
    instruction: str
    tests: Path
    solution: Path | None

    @property
    def name(self) -> str:
        return self.config.name


@dataclass(frozen=True)
class HarborTask:
    """One task folder, read and checked."""

    path: Path
    config: TaskConfig
    instruction: str
    """What the agent is told first (a multi-step task's first step's)."""
    has_solution: bool
    steps: tuple[HarborStep, ...] = ()
    """A multi-step task's steps, in order; empty for a single-step task."""

    @property
    def name(self) -> str:
        """The registry name when ``[task]`` gives one, else the folder's name."""
        return self.config.task.name if self.config.task is not None else self.path.name

    @cached_property
    def digest(self) -> str:
        """``folder_digest(path)``, made when first asked for (a row is stamped with it, a
        rollout checks its row against it) and kept: the folder as it was then."""
        return folder_digest(self.path)


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
    if config.environment.docker_image is None and not (path / DOCKERFILE).is_file():
        raise ConfigError(f"{path}: missing {DOCKERFILE} (or environment.docker_image in {CONFIG})")
    steps = tuple(_read_step(path, step) for step in config.steps or [])
    if steps:
        instruction = steps[0].instruction
    else:
        instruction = _instruction(path / INSTRUCTION)
        if not (path / TEST_SCRIPT).is_file():
            raise ConfigError(
                f"{path}: missing {TEST_SCRIPT} (the verifier, which writes the reward)"
            )
    walk(path)  # a FIFO, socket or device, or nesting too deep: refused now, nothing opened
    has_solution = (
        all(step.solution is not None for step in steps)
        if steps
        else (path / SOLVE_SCRIPT).is_file()
    )
    return HarborTask(
        path=path,
        config=config,
        instruction=instruction,
        has_solution=has_solution,
        steps=steps,
    )


def _instruction(path: Path) -> str:
    if not path.is_file():
        raise ConfigError(f"{path.parent}: missing {path.name} (what the agent is told)")
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        raise ConfigError(f"{path}: empty: describe the agent's task")
    return text


def _read_step(path: Path, step: StepConfig) -> HarborStep:
    """Step ``step`` of the task at ``path``: ``steps/<name>/instruction.md``, its tests
    (``steps/<name>/tests/``, else the task's ``tests/``) and oracle (likewise)."""
    folder = path / STEPS / step.name
    if not folder.is_dir():
        raise ConfigError(f"{path / CONFIG}: steps: no folder {STEPS}/{step.name}/ for its step")
    tests = next(
        (place for place in (folder / "tests", path / "tests") if (place / "test.sh").is_file()),
        None,
    )
    if tests is None:
        raise ConfigError(
            f"{folder}: missing tests/test.sh (and the task has no {TEST_SCRIPT} to fall back on)"
        )
    solution = next(
        (
            place
            for place in (folder / "solution", path / "solution")
            if (place / "solve.sh").is_file()
        ),
        None,
    )
    return HarborStep(
        config=step, instruction=_instruction(folder / INSTRUCTION), tests=tests, solution=solution
    )


def read_tasks(root: str | os.PathLike[str]) -> list[HarborTask]:
    """One task folder, or every task folder in ``root`` (sorted by name; hidden folders
    skipped); a ``ConfigError`` with one line per bad folder, every one of them named."""
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
    tasks: list[HarborTask] = []
    problems: list[str] = []
    for folder in folders:
        try:
            tasks.append(read_task(folder))
        except ConfigError as error:
            problems.append(str(error))
    if problems:
        raise ConfigError(bad_tasks(problems, len(folders)))
    return tasks


def bad_tasks(problems: list[str], total: int) -> str:
    """One error for every bad task of a folder of ``total``: the first line says how many,
    then one line each (a single bad task is its own line)."""
    if len(problems) == 1:
        return problems[0]
    return f"{len(problems)} of {total} task folders are refused:\n" + "\n".join(
        f"  {problem}" for problem in problems
    )


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
