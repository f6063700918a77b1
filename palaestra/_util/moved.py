"""Old import paths of modules that moved, kept working for one release with a warning.

``palaestra`` was rebuilt into rooms (``environment/``, ``wire/``, ``run/``, ``http/``,
``stack/``, ...). An import of a module by its old path finds the module at its new one,
registered under both names, and says where it went in a ``DeprecationWarning``:

    from palaestra.env_client import LocalEnvironmentClient   # warns; works until 0.3
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType

MOVED: dict[str, str] = {
    "palaestra.tools": "palaestra.environment.tools",
    "palaestra.sessions": "palaestra.environment.sessions",
    "palaestra.step_env": "palaestra.environment.step",
    "palaestra.verdicts": "palaestra.environment.verdicts",
    "palaestra.answers": "palaestra.environment.answers",
    "palaestra.boundary": "palaestra.environment.running.boundary",
    "palaestra.env_client": "palaestra.environment.running.client",
    "palaestra.threads": "palaestra.environment.running.threads",
    "palaestra.registry": "palaestra.environment.finding.registry",
    "palaestra.protocol": "palaestra.wire.protocol",
    "palaestra.rows": "palaestra.wire.rows",
    "palaestra.jsonl": "palaestra.wire.jsonl",
    "palaestra.lazy": "palaestra._util.lazy",
    "palaestra.processes": "palaestra._util.processes",
    "palaestra.arguments": "palaestra._util.arguments",
    "palaestra.plugins": "palaestra._util.plugins",
    "palaestra.assembly": "palaestra.collection.assembly",
    "palaestra.collection.rows": "palaestra.collection.records",
    "palaestra.collection.metrics": "palaestra.collection.aggregate",
    "palaestra.collection.api": "palaestra.run.collect",
    "palaestra.collection.reverify": "palaestra.run.reverify",
    "palaestra.collection.export": "palaestra.run.export",
    "palaestra.evaluate.evaluation": "palaestra.run.eval",
    "palaestra.observe.metrics_run": "palaestra.run.metrics",
    "palaestra.collection.progress": "palaestra.cli.progress",
    "palaestra.evaluate.running": "palaestra.evaluate.summary",
    "palaestra.serve.announce": "palaestra.http.announce",
    "palaestra.serve.guard": "palaestra.http.guard",
    "palaestra.serve.http_json": "palaestra.http.json",
    "palaestra.serve.http_server": "palaestra.http.protocol",
    "palaestra.serve.sessions_http": "palaestra.http.sessions",
    "palaestra.serve.uvicorn_runner": "palaestra.http.runner",
    "palaestra.serve.stack_config": "palaestra.stack.config",
    "palaestra.serve.stack_state": "palaestra.stack.state",
    "palaestra.serve.supervisor": "palaestra.stack.supervisor",
    "palaestra.serve.socket_dir": "palaestra.stack.sockets",
    "palaestra.serve.head_app": "palaestra.stack.head",
    "palaestra.observe.viewer": "palaestra.viewer",
    "palaestra.models.auto_api": "palaestra.models.openai.auto_api",
    "palaestra.models.endpoint": "palaestra.models.openai.endpoint",
    "palaestra.models.http": "palaestra.models.openai.retry",
    "palaestra.models.openai_backend": "palaestra.models.openai.backend",
    "palaestra.models.openai_chat": "palaestra.models.openai.chat",
    "palaestra.models.openai_responses": "palaestra.models.openai.responses",
    "palaestra.models.token_client": "palaestra.models.openai.token_client",
    "palaestra.cli.serve_servers": "palaestra.cli.serve.servers",
    "palaestra.cli.serve_openenv": "palaestra.cli.serve.openenv",
    "palaestra.cli.test_env": "palaestra.cli.review",
    "palaestra.environment.client": "palaestra.environment.running.client",
    "palaestra.environment.threads": "palaestra.environment.running.threads",
    "palaestra.environment.boundary": "palaestra.environment.running.boundary",
    "palaestra.environment.harbor": "palaestra.environment.kinds.harbor",
    "palaestra.environment.machine": "palaestra.environment.kinds.machine",
    "palaestra.environment.ors": "palaestra.environment.kinds.ors",
    "palaestra.environment.mcp": "palaestra.environment.kinds.mcp",
    "palaestra.environment.mcp_connection": "palaestra.environment.kinds.mcp_connection",
    "palaestra.environment.registry": "palaestra.environment.finding.registry",
    "palaestra.environment.catalogue": "palaestra.environment.finding.catalogue",
    "palaestra.environment.import_check": "palaestra.environment.finding.import_check",
    "palaestra.environment.install_report": "palaestra.environment.finding.install_report",
    "palaestra.environment.boxed_math": "palaestra.envs._shared.boxed_math",
    "palaestra.environment.reasoning_gym": "palaestra.envs._shared.reasoning_gym",
    "palaestra.environment.puzzles": "palaestra.envs._shared.puzzles",
}


class _Alias(importlib.abc.Loader):
    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        """The default: an empty module, replaced by the real one in ``exec_module``."""

    def exec_module(self, module: ModuleType) -> None:
        """Stand the module at its new path in for the old name (the import system reads
        ``sys.modules`` back after this, so the caller gets the real module)."""
        warnings.warn(
            f"{module.__name__} moved to {self.new}; the old path goes in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        sys.modules[module.__name__] = importlib.import_module(self.new)


class MovedModules(importlib.abc.MetaPathFinder):
    """Finds a moved module by its old name (the one finder ``import palaestra`` adds)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = new_name(fullname)
        return None if new is None else importlib.machinery.ModuleSpec(fullname, _Alias(new))


def new_name(old: str) -> str | None:
    """Where the module ``old`` lives now (a module inside a moved package moved with it)."""
    if not old.startswith("palaestra."):
        return None
    module, rest = old, ""
    while module not in MOVED:
        module, dot, last = module.rpartition(".")
        if not dot:
            return None
        rest = f".{last}{rest}"
    return MOVED[module] + rest


def install() -> None:
    """Add the finder once (``palaestra/__init__`` calls this; a second call adds nothing).

    First in line, so a module of a moved package is not found a second time by its old
    name through the package's path; it answers only for the names in ``MOVED``.
    """
    if not any(isinstance(finder, MovedModules) for finder in sys.meta_path):
        sys.meta_path.insert(0, MovedModules())
