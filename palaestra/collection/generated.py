"""Tasks made by an environment's generator, written to a file so a run can resume on them."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import orjson

from palaestra.collection.files import writing
from palaestra.collection.tasks import task_problem
from palaestra.environment.base import Environment
from palaestra.errors import ConfigError
from palaestra.types import JsonDict


def write_generated_tasks(environment: Environment, *, count: int, seed: int, path: Path) -> Path:
    """Write ``count`` tasks from ``environment.generate_tasks`` to ``path`` (same seed, same file).

    Writing is streamed: a large ``count`` never sits in memory. The file is written beside
    and renamed into place, so a collector already reading ``path`` keeps reading the tasks it
    started with (a second ``collect`` refused by the lock has rewritten the file by then).
    """
    try:
        rows = environment.generate_tasks(count, seed)
    except NotImplementedError as error:
        raise ConfigError(f"{error}: pass --input") from None
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        with writing(path):
            path.parent.mkdir(parents=True, exist_ok=True)
            written = _write(environment, rows, temporary)
            if written == count:
                os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    if written != count:
        raise ConfigError(
            f"environment '{environment.name}' generated {written} tasks, not the {count} asked for"
        )
    return path


def _write(environment: Environment, rows: Iterable[JsonDict], path: Path) -> int:
    written = 0
    with path.open("wb") as file:
        for row in rows:
            problem = task_problem(row)
            if problem is not None:
                field, reason = problem
                raise ConfigError(
                    f"environment '{environment.name}' generated task {written} "
                    f"with field '{field}': {reason}"
                )
            file.write(orjson.dumps(row, option=orjson.OPT_APPEND_NEWLINE))
            written += 1
    return written
