"""Checks of an environment's example tasks: they parse, and name only tools that exist."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from palaestra.authoring.report import Check, counted
from palaestra.collection.tasks import read_tasks
from palaestra.environment.base import Environment
from palaestra.environment.tools import ToolSpec
from palaestra.types import JsonDict
from palaestra.wire.rows import PARAMS


def check_tasks_parse(path: Path | None) -> tuple[Check, list[JsonDict]]:
    """Every line of the tasks file is a task by palaestra's own reading (``read_tasks``, the
    collector's); returns the check and the tasks that parsed."""
    name = "example tasks"
    if path is None:
        return Check.failed(
            name, "no example tasks: put a tasks.jsonl beside the environment's module"
        ), []
    try:
        lines = list(read_tasks(path))
    except OSError as error:
        return Check.failed(name, f"cannot read {path}: {error.strerror}"), []
    problems = [str(line.error) for line in lines if line.error is not None]
    rows = [line.row for line in lines if line.error is None]
    if problems:
        return Check.failed(name, "; ".join(problems[:3]), problems=problems), rows
    if not rows:
        return Check.failed(name, f"{path} holds no tasks"), rows
    return Check.passed(
        name, f"{counted(len(rows), 'task')} in {path.name} parse", tasks=len(rows)
    ), rows


def check_task_tools(
    cls: type[Environment], rows: list[JsonDict], specs: Mapping[str, ToolSpec] | None = None
) -> Check:
    """A task that lists ``tools`` (or forces one with ``tool_choice``) names only tools the
    environment has: a call to any other would be answered "unknown tool".

    An environment with no tools of its own whose tasks bring theirs (function_calling: the
    calls are scored, never run) passes with that said. ``specs``: the built instance's tools
    (an MCP server's among them), default the class's.
    """
    name = "task tools"
    known = set(cls.tool_specs if specs is None else specs)
    listed = 0
    problems: list[str] = []
    for index, row in enumerate(rows):
        params = row[PARAMS]
        entries = [*(params.get("tools") or []), params.get("tool_choice")]
        names = [n for n in map(_tool_name, entries) if n is not None]
        listed += len(names)
        if not known:
            continue
        unknown = sorted({n for n in names if n not in known})
        if unknown:
            problems.append(f"task {index} names unknown tools: {', '.join(unknown)}")
    if problems:
        return Check.failed(
            name, "; ".join(problems[:3]) + f" (the environment has: {', '.join(sorted(known))})"
        )
    if listed and not known:
        return Check.passed(name, "the tasks bring their own tools (the environment has none)")
    if not listed:
        return Check.passed(name, "no task lists tools: the environment's are offered")
    return Check.passed(name, f"every tool the tasks name exists ({counted(listed, 'mention')})")


def _tool_name(entry: object) -> str | None:
    """The function name of a ``tools`` entry or ``tool_choice`` (Responses or Chat form)."""
    if not isinstance(entry, dict):
        return None
    name = entry.get("name")
    function = entry.get("function")
    if name is None and isinstance(function, dict):
        name = function.get("name")
    return None if name is None else str(name)
