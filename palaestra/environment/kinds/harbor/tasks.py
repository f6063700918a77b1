"""Harbor task folders as palaestra tasks: what is honoured, what is refused, the task rows.

A folder of ``task.toml`` is read by ``palaestra.wire.harbor`` (Harbor's own field names and
defaults); here each task is checked against what a machine on this host can give, once, when
the environment is built, so a task that cannot be run as written is one line naming its folder
and field before any rollout starts:

- honoured: ``[environment]`` ``cpus``, ``memory_mb``, ``storage_mb`` (the box's bounds),
  ``build_timeout_sec`` (the image build), ``env`` and ``workdir`` (every command in the box),
  ``healthcheck`` (before the agent), ``docker_image`` (built ``FROM`` it: found when the
  provider has it, refused at load or first build when not); ``[agent]`` ``timeout_sec`` and
  ``user``; ``[verifier]`` ``timeout_sec``, ``user``, ``env``, ``environment_mode`` and
  ``[verifier.environment]`` (a separate verifier machine), ``[[verifier.collect]]`` on the
  agent's machine; ``artifacts`` (kept with the row, handed to a separate verifier);
  ``[[steps]]`` (multi-step tasks); ``[solution]`` ``env`` (the oracle's run);
- honoured through a filtering proxy (``network``): ``network_mode = "allowlist"`` with
  ``allowed_hosts``, for a machine or a phase;
- honoured in the task's machine: ``[[environment.mcp_servers]]`` of transport ``stdio``
  (``mcp_servers``: their tools are the agent's, beside the machine tools);
- refused: ``network_mode = "public"`` (Harbor's default when unset), for a machine or a
  phase, unless the user opts in (``public``); Windows; GPUs and TPUs; MCP servers over HTTP
  (a service of their own) and skills (not run here, and a task that relies on them would be
  judged wrongly); a collect hook or artifact of another service than the agent's machine
  (no compose services here); artifacts overlapping the runner's ``/logs/verifier`` or
  ``/logs/agent``; artifact ``exclude`` patterns; a step's ``workdir/`` setup files.
- recorded, not acted on: ``metadata``, ``source``.

A task's row names its folder and carries its digest (``TASK_DIGEST``): a row is bound to the
folder's content, and a resumed run refuses a folder that changed (``palaestra.collection``).

A folder of task folders may come as one tar archive (how a built-in ships its set): it is
unpacked on first use into the cache, under the archive's digest (``unpacked``).
"""

from __future__ import annotations

import hashlib
import os
import tarfile
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath

import orjson

from palaestra._util.rows_file import cache_directory, content_named, made_once
from palaestra.errors import ConfigError
from palaestra.sandbox.machines.provider import BoxSpec
from palaestra.sandbox.machines.registry import PROVIDERS
from palaestra.types import JsonDict
from palaestra.wire.harbor import (
    AGENT_LOGS_DIR,
    CONFIG,
    ENVIRONMENT,
    MAIN_SERVICE,
    STEPS,
    VERIFIER_LOGS,
    AgentConfig,
    ArtifactConfig,
    EnvironmentConfig,
    HarborTask,
    VerifierConfig,
    bad_tasks,
    read_tasks,
)
from palaestra.wire.rows import PARAMS, TASK_DIGEST

TASK_FIELD = "harbor_task"
"""The row's field naming its task folder (the folder's name inside the environment's path)."""
PUBLIC_REFUSED = (
    "the open network is not given to a task unless the user opts in "
    "(--env-arg network_public=true)"
)
DEFAULT_AGENT_USER_NOTE = "the image's default user (its Dockerfile's USER, else root)"


def load_tasks(
    root: str | os.PathLike[str], sandbox: str | None = None, *, public: bool = False
) -> dict[str, HarborTask]:
    """The task folders at ``root`` (one, or a folder of them) by folder name, each checked
    runnable here (``public``: the user lets ``network_mode = "public"`` tasks run), and
    buildable by the provider ``sandbox`` when one is named (``Provider.refusal`` of each
    folder it builds); a ``ConfigError`` with one line per bad task, every one named. An
    archive of task folders is read where it unpacks to (``unpacked``)."""
    tasks = read_tasks(unpacked(Path(root)))
    provider = PROVIDERS.load(sandbox).value if sandbox is not None else None
    found: dict[str, HarborTask] = {}
    problems: list[str] = []
    for task in tasks:
        problem = refusal(task, public=public)
        if problem is not None:
            problems.append(f"{task.path / CONFIG}: {problem}")
            continue
        if provider is not None:
            unbuildable = next(
                (why for why in map(provider.refusal, build_contexts(task)) if why is not None),
                None,
            )
            if unbuildable is not None:
                problems.append(f"{task.path}: sandbox '{sandbox}' cannot build it: {unbuildable}")
                continue
        found[task.path.name] = task
    if problems:
        raise ConfigError(bad_tasks(problems, len(tasks)))
    return found


def unpacked(path: Path) -> Path:
    """``path`` itself, or, when it is a tar archive (of task folders), the folder it unpacks
    to: ``<cache>/harbor/unpacked/<the archive's sha256>``, made on first use (``made_once``:
    two processes unpacking at once both end with the whole folder, and a reader never sees
    half of one). Members are extracted with tarfile's ``data`` filter (no path outside the
    folder, no device, no link out of it); an archive that cannot be read is one
    ``ConfigError``."""
    if not path.is_file():
        return path

    def unpack(folder: Path) -> None:
        folder.mkdir()
        with tarfile.open(path, mode="r:*") as archive:
            archive.extractall(folder, filter="data")

    target = rows_directory() / "unpacked" / hashlib.sha256(path.read_bytes()).hexdigest()[:32]
    try:
        return made_once(target, unpack)
    except (tarfile.TarError, OSError, EOFError) as error:
        raise ConfigError(f"{path}: cannot unpack it as task folders: {error}") from None


def build_contexts(task: HarborTask) -> list[Path]:
    """The Dockerfile folders ``task`` builds: ``environment/`` (or the one naming its
    ``docker_image``), a separate verifier's ``docker_image``, and each ``tests/`` that has a
    Dockerfile (a separate verifier's machine)."""
    contexts = [agent_context(task)]
    verifiers = [task.config.verifier, *(step.verifier for step in task.config.steps or [])]
    for verifier in verifiers:
        if verifier.environment is not None and verifier.environment.docker_image is not None:
            contexts.append(image_context(verifier.environment.docker_image))
    for tests in {step.tests for step in task.steps} or {task.path / "tests"}:
        if (tests / "Dockerfile").is_file():
            contexts.append(tests)
    return contexts


def agent_context(task: HarborTask) -> Path:
    """The Dockerfile folder of the agent's machine: ``environment/``, or one that starts
    ``FROM`` the task's ``docker_image``."""
    image = task.config.environment.docker_image
    return image_context(image) if image is not None else task.path / ENVIRONMENT


def image_context(image: str) -> Path:
    """A Dockerfile folder holding only ``FROM image``: a pre-built image by name is built
    (found) by the provider like any other, and refused as any ``FROM`` it cannot have."""
    if any(char.isspace() for char in image) or not image:
        raise ConfigError(f"docker_image = {image!r}: not an image name")
    folder = rows_directory() / "images" / hashlib.sha256(image.encode()).hexdigest()[:20]
    dockerfile = folder / "Dockerfile"
    text = f"FROM {image}\n"
    if not (dockerfile.is_file() and dockerfile.read_text(encoding="utf-8") == text):
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f".Dockerfile.{os.getpid()}"
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, dockerfile)
    return folder


def refusal(task: HarborTask, *, public: bool = False) -> str | None:
    """Why ``task`` cannot be run here as its ``task.toml`` says (one clause naming the field),
    or None; ``public``: the user opted into ``network_mode = "public"``."""
    config = task.config
    problem = _machine_refusal("environment", config.environment, public)
    if problem is not None:
        return problem
    phases: list[tuple[str, AgentConfig | VerifierConfig]] = [
        ("agent", config.agent),
        ("verifier", config.verifier),
    ]
    for index, step in enumerate(config.steps or []):
        phases += [
            (f"steps[{index}].agent", step.agent),
            (f"steps[{index}].verifier", step.verifier),
        ]
    for phase, policy in phases:
        if policy.network_mode == "public" and not public:
            return f"{phase}.network_mode = 'public': {PUBLIC_REFUSED}"
        if isinstance(policy, VerifierConfig):
            if policy.environment is not None:
                problem = _machine_refusal(f"{phase}.environment", policy.environment, public)
                if problem is not None:
                    return problem
            for hook in policy.collect:
                if hook.service != MAIN_SERVICE:
                    return (
                        f"{phase}.collect: service = '{hook.service}': only the agent's machine "
                        f"('{MAIN_SERVICE}') runs here, no other service"
                    )
    artifacts = [*config.artifacts, *(a for step in config.steps or [] for a in step.artifacts)]
    for artifact in artifacts:
        if isinstance(artifact, ArtifactConfig):
            if artifact.service not in (None, MAIN_SERVICE):
                return (
                    f"artifacts: service = '{artifact.service}': only the agent's machine "
                    f"('{MAIN_SERVICE}') runs here"
                )
            if artifact.exclude:
                return "artifacts: exclude: not supported here (list the paths to keep)"
            source = artifact.source
        else:
            source = artifact
        if not source.startswith("/"):
            return f"artifacts: {source!r}: name an absolute path in the machine"
        pure = PurePosixPath(source.rstrip("/") or "/")
        for kept in (PurePosixPath(VERIFIER_LOGS), PurePosixPath(AGENT_LOGS_DIR)):
            if pure == kept or kept in pure.parents or pure in kept.parents:
                return f"artifacts: {source!r} overlaps {kept}, which the runner writes"
    for name in (step.name for step in task.steps):
        if (task.path / STEPS / name / "workdir").exists():
            return f"steps: {STEPS}/{name}/workdir: per-step setup files are not supported here"
    return None


def _machine_refusal(field: str, environment: EnvironmentConfig, public: bool) -> str | None:
    """Why the machine ``environment`` (``[environment]``, or a separate verifier's) cannot
    be had here, naming ``field``; None when it can."""
    if environment.network_mode == "public" and not public:
        unset = "" if "network_mode" in environment.model_fields_set else " (Harbor's default)"
        return (
            f"{field}.network_mode = 'public'{unset}: {PUBLIC_REFUSED}; a task that needs "
            f'no network says network_mode = "no-network", one that needs a few hosts '
            f'"allowlist" with allowed_hosts'
        )
    if environment.os != "linux":
        return f"{field}.os = '{environment.os}': only Linux machines run here"
    if environment.gpus or environment.gpu_types or environment.tpu:
        return f"{field}.gpus/gpu_types/tpu: machines here have no accelerators"
    for server in environment.mcp_servers:
        if field != "environment":
            return (
                f"{field}.mcp_servers: MCP servers are the agent's: declare them in [environment]"
            )
        if server.transport != "stdio":
            return (
                f"{field}.mcp_servers: '{server.name}' (transport = '{server.transport}') is a "
                "server of its own, which no machine here runs or reaches; only stdio servers, "
                "started in the task's machine, run here"
            )
    names = [server.name for server in environment.mcp_servers]
    if len(set(names)) != len(names):
        return f"{field}.mcp_servers: two servers named alike ({', '.join(names)})"
    if environment.skills_dir:
        return (
            f"{field}.skills_dir: skills are not installed here (the task would run without them)"
        )
    return None


def box_spec(
    task: HarborTask, environment: EnvironmentConfig | None = None, *, loopback: bool = False
) -> BoxSpec:
    """The box ``task`` runs in (or its separate verifier's, ``environment``): its resources
    (Harbor's defaults where unset, which are ``BoxSpec``'s) and no network; ``loopback``:
    its commands share one namespace, for a proxy to serve (``network``)."""
    environment = environment or task.config.environment
    default = BoxSpec()
    return BoxSpec(
        cpus=float(environment.cpus) if environment.cpus is not None else default.cpus,
        memory_mb=environment.memory_mb or default.memory_mb,
        storage_mb=environment.storage_mb or default.storage_mb,
        network=False,
        loopback=loopback,
    )


def task_row(name: str, task: HarborTask, digest: str | None = None) -> JsonDict:
    """The task row of folder ``name``: the instruction as the user's message, the folder's
    name and its digest (what the row is bound to: ``digest`` when the caller knows it, else
    the task's)."""
    return {
        PARAMS: {"input": [{"role": "user", "content": task.instruction}]},
        TASK_FIELD: name,
        TASK_DIGEST: {"path": str(task.path.resolve()), "digest": digest or task.digest},
    }


def write_rows(
    tasks: Mapping[str, HarborTask], directory: Path, digests: Mapping[str, str] | None = None
) -> Path:
    """The tasks' rows as a JSONL file in ``directory``, named by its content (the same folders
    give the same file, so a resumed run reads the same input); written beside, then renamed.
    ``digests``: the folders' digests by name where the caller keeps them (else each task's
    folder is hashed)."""
    known = digests or {}
    data = b"".join(
        orjson.dumps(task_row(name, task, known.get(name)), option=orjson.OPT_APPEND_NEWLINE)
        for name, task in sorted(tasks.items())
    )
    return content_named(data, directory)


def rows_directory() -> Path:
    """Where the rows of task folders are written: ``$XDG_CACHE_HOME/palaestra/harbor``."""
    return cache_directory("harbor")


def described(tasks: Iterable[str]) -> str:
    names = sorted(tasks)
    shown = ", ".join(names[:5])
    return shown + (f" (+{len(names) - 5} more)" if len(names) > 5 else "")
