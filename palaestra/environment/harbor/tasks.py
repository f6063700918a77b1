"""Harbor task folders as palaestra tasks: what is honoured, what is refused, the task rows.

A folder of ``task.toml`` is read by ``palaestra.wire.harbor`` (Harbor's own field names and
defaults); here each task is checked against what a machine on this host can give, once, when
the environment is built, so a task that cannot be run as written is one line naming its folder
and field before any rollout starts:

- honoured: ``[environment]`` ``cpus``, ``memory_mb``, ``storage_mb`` (the box's bounds),
  ``build_timeout_sec`` (the image build), ``env`` and ``workdir`` (every command in the box);
  ``[agent]`` ``timeout_sec`` (the agent's phase) and ``user``; ``[verifier]`` ``timeout_sec``,
  ``user`` and ``env``; ``[solution]`` ``env`` (the oracle's run);
- refused: any network (``network_mode`` ``public``, Harbor's default when unset, or
  ``allowlist``, for the machine or a phase): boxes here have none and nothing may reach a
  private-range address; Windows; GPUs and TPUs; a pre-built ``docker_image`` (nothing can be
  pulled here); a separate verifier machine; MCP servers, health checks, skills and
  ``verifier.collect`` (not run here, and a task that relies on them would be judged wrongly);
  multi-step tasks (``palaestra.wire.harbor``).
- recorded, not acted on: ``metadata``, ``source``, ``artifacts`` (files Harbor copies out
  after a trial).

A task's row names its folder and carries its digest (``TASK_DIGEST``): a row is bound to the
folder's content, and a resumed run refuses a folder that changed (``palaestra.collection``).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

import orjson

from palaestra.errors import ConfigError
from palaestra.sandbox.machines.provider import BoxSpec
from palaestra.sandbox.machines.registry import PROVIDERS
from palaestra.types import JsonDict
from palaestra.wire.harbor import CONFIG, ENVIRONMENT, HarborTask, read_tasks
from palaestra.wire.rows import PARAMS, TASK_DIGEST

TASK_FIELD = "harbor_task"
"""The row's field naming its task folder (the folder's name inside the environment's path)."""
DEFAULT_AGENT_USER_NOTE = "the image's default user (its Dockerfile's USER, else root)"


def load_tasks(root: str | os.PathLike[str], sandbox: str | None = None) -> dict[str, HarborTask]:
    """The task folders at ``root`` (one, or a folder of them) by folder name, each checked
    runnable here, and buildable by the provider ``sandbox`` when one is named
    (``Provider.refusal`` of its ``environment/``); a one-line ``ConfigError`` at the first
    that is not."""
    tasks = read_tasks(root)
    provider = PROVIDERS.load(sandbox).value if sandbox is not None else None
    found: dict[str, HarborTask] = {}
    for task in tasks:
        problem = refusal(task)
        if problem is not None:
            raise ConfigError(f"{task.path / CONFIG}: {problem}")
        if provider is not None:
            unbuildable = provider.refusal(task.path / ENVIRONMENT)
            if unbuildable is not None:
                raise ConfigError(
                    f"{task.path}: sandbox '{sandbox}' cannot build it: {unbuildable}"
                )
        found[task.path.name] = task
    return found


def refusal(task: HarborTask) -> str | None:
    """Why ``task`` cannot be run here as its ``task.toml`` says (one clause naming the field),
    or None."""
    config = task.config
    environment = config.environment
    if environment.network_mode != "no-network":
        unset = "" if "network_mode" in environment.model_fields_set else " (Harbor's default)"
        return (
            f"environment.network_mode = '{environment.network_mode}'{unset}: machines here have "
            f'no network; a task that needs none says network_mode = "no-network"'
        )
    for phase, policy in (("agent", config.agent), ("verifier", config.verifier)):
        if policy.network_mode not in (None, "no-network"):
            return f"{phase}.network_mode = '{policy.network_mode}': machines here have no network"
    if environment.os != "linux":
        return f"environment.os = '{environment.os}': only Linux machines run here"
    if environment.gpus or environment.gpu_types or environment.tpu:
        return "environment.gpus/gpu_types/tpu: machines here have no accelerators"
    if environment.docker_image is not None:
        return (
            f"environment.docker_image = '{environment.docker_image}': a pre-built image cannot "
            f"be pulled here; remove it to build environment/Dockerfile"
        )
    verifier = config.verifier
    if verifier.environment_mode == "separate" or verifier.environment is not None:
        return "verifier.environment: a separate verifier machine is not supported (use shared)"
    unsupported = {
        "environment.mcp_servers": environment.mcp_servers,
        "environment.healthcheck": environment.healthcheck,
        "environment.skills_dir": environment.skills_dir,
        "verifier.collect": verifier.collect,
    }
    for name, value in unsupported.items():
        if value:
            return f"{name}: not supported here (the task would run without it)"
    return None


def box_spec(task: HarborTask) -> BoxSpec:
    """The box ``task`` runs in: its ``[environment]`` resources (Harbor's defaults where unset,
    which are ``BoxSpec``'s), no network, and its build budget as the start's."""
    environment = task.config.environment
    default = BoxSpec()
    return BoxSpec(
        cpus=float(environment.cpus) if environment.cpus is not None else default.cpus,
        memory_mb=environment.memory_mb or default.memory_mb,
        storage_mb=environment.storage_mb or default.storage_mb,
        network=False,
    )


def task_row(name: str, task: HarborTask) -> JsonDict:
    """The task row of folder ``name``: the instruction as the user's message, the folder's
    name and its digest (what the row is bound to)."""
    return {
        PARAMS: {"input": [{"role": "user", "content": task.instruction}]},
        TASK_FIELD: name,
        TASK_DIGEST: {"path": str(task.path.resolve()), "digest": task.digest},
    }


def write_rows(tasks: dict[str, HarborTask], directory: Path) -> Path:
    """The tasks' rows as a JSONL file in ``directory``, named by its content (the same folders
    give the same file, so a resumed run reads the same input); written beside, then renamed."""
    data = b"".join(
        orjson.dumps(task_row(name, task), option=orjson.OPT_APPEND_NEWLINE)
        for name, task in sorted(tasks.items())
    )
    path = directory / f"tasks-{hashlib.sha256(data).hexdigest()[:20]}.jsonl"
    if path.is_file() and path.read_bytes() == data:
        return path
    directory.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_bytes(data)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    return path


def rows_directory() -> Path:
    """Where the rows of task folders are written: ``$XDG_CACHE_HOME/palaestra/harbor``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "palaestra" / "harbor"


def described(tasks: Iterable[str]) -> str:
    names = sorted(tasks)
    shown = ", ".join(names[:5])
    return shown + (f" (+{len(names) - 5} more)" if len(names) > 5 else "")
