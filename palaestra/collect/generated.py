"""Tasks made by an environment's generator, written to a file so a run can resume on them."""

from __future__ import annotations

from pathlib import Path

import orjson

from palaestra.collect.tasks import task_problem
from palaestra.environment import Environment
from palaestra.errors import ConfigError


def write_generated_tasks(environment: Environment, *, count: int, seed: int, path: Path) -> Path:
    """Write ``count`` tasks from ``environment.generate_tasks`` to ``path`` (same seed, same file).

    Writing is streamed: a large ``count`` never sits in memory.
    """
    try:
        rows = environment.generate_tasks(count, seed)
    except NotImplementedError as error:
        raise ConfigError(f"{error}: pass --input") from None
    path.parent.mkdir(parents=True, exist_ok=True)
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
    if written != count:
        raise ConfigError(
            f"environment '{environment.name}' generated {written} tasks, not the {count} asked for"
        )
    return path
