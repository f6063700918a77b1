"""Reading tasks: lazily, one line at a time, with errors that name file, line and field."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

from palaestra.errors import InputError
from palaestra.types import JsonDict


@dataclass(frozen=True, slots=True)
class TaskLine:
    """One task line: its row, or the error that makes it unusable. ``index`` counts from 0."""

    index: int
    line: int
    row: JsonDict
    error: InputError | None = None


def read_tasks(path: Path, *, limit: int | None = None) -> Iterator[TaskLine]:
    """Yield each task line of a JSONL file; a line that is not a task carries its error.

    Blank lines are skipped; every other line is one task index, valid or not, so indices stay
    stable when a bad row is fixed later.
    """
    index = 0
    with path.open("rb") as lines:
        for number, raw in enumerate(lines, start=1):
            if limit is not None and index >= limit:
                return
            if not raw.strip():
                continue
            yield parse_task(raw, index=index, path=str(path), line=number)
            index += 1


def count_tasks(path: Path, *, limit: int | None = None) -> int:
    """How many task lines the file holds (cheap: no parsing)."""
    count = 0
    with path.open("rb") as lines:
        for raw in lines:
            if raw.strip():
                count += 1
                if limit is not None and count >= limit:
                    break
    return count


def parse_task(raw: bytes, *, index: int, path: str, line: int) -> TaskLine:
    try:
        row = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        return TaskLine(
            index, line, {}, InputError(f"not valid JSON ({error})", path=path, line=line)
        )
    problem = task_problem(row)
    if problem is not None:
        field, reason = problem
        return TaskLine(index, line, {}, InputError(reason, path=path, line=line, field=field))
    return TaskLine(index, line, row)


def task_problem(row: object) -> tuple[str | None, str] | None:
    """What makes ``row`` not a task, as (field, reason); None when it is one."""
    if not isinstance(row, dict):
        return None, f"a task must be a JSON object, got {type(row).__name__}"
    params = row.get("responses_create_params")
    if params is None:
        return "responses_create_params", "missing (every task needs its model request)"
    if not isinstance(params, dict):
        return "responses_create_params", "must be an object"
    given = params.get("input")
    if given is None:
        return "responses_create_params.input", "missing"
    if isinstance(given, str):
        return None
    if not isinstance(given, list):
        return "responses_create_params.input", "must be a string or a list of items"
    for position, item in enumerate(given):
        if not isinstance(item, dict):
            return f"responses_create_params.input[{position}]", "must be an object"
        if "role" in item and "content" not in item:
            return f"responses_create_params.input[{position}].content", "missing"
    tools = params.get("tools")
    if tools is not None and not isinstance(tools, list):
        return "responses_create_params.tools", "must be a list"
    return None
