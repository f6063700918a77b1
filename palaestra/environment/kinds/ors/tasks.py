"""An ORS server's tasks as task rows, written where a run (and a resumed one) reads them.

A row's ``responses_create_params.input`` is the task's prompt as the server gives it (a
session is opened for each task to ask it, then deleted), and its ``ors`` field the task
itself: ``{"split", "index", "task_spec"}``, which seeds the rollout's own session.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import orjson

from palaestra._util.rows_file import cache_directory, content_named
from palaestra.environment.kinds.ors.connection import Catalogue
from palaestra.environment.kinds.ors.environment import TASK_FIELD
from palaestra.types import JsonDict
from palaestra.wire.rows import PARAMS

PROMPTS_AT_ONCE = 8
"""Prompts asked at the same time (each is a session opened, read and deleted)."""


def task_rows(catalogue: Catalogue, environment: str, split: str) -> list[JsonDict]:
    """The rows of ``split``'s tasks, in the server's order."""
    specs = catalogue.tasks(environment, split)
    with ThreadPoolExecutor(PROMPTS_AT_ONCE, thread_name_prefix="ors-prompts") as pool:
        prompts = list(pool.map(lambda spec: catalogue.prompt(environment, spec), specs))
    return [
        {
            PARAMS: {"input": messages},
            TASK_FIELD: {"split": split, "index": index, "task_spec": spec},
        }
        for index, (spec, messages) in enumerate(zip(specs, prompts, strict=True))
    ]


def write_rows(rows: list[JsonDict], directory: Path) -> Path:
    """``rows`` as a JSONL file in ``directory`` named by its content (the same tasks give
    the same file, so a resumed run reads the same input); written beside, then renamed."""
    data = b"".join(orjson.dumps(row, option=orjson.OPT_APPEND_NEWLINE) for row in rows)
    return content_named(data, directory)


def rows_directory() -> Path:
    """Where ORS servers' rows are written: ``$XDG_CACHE_HOME/palaestra/ors``."""
    return cache_directory("ors")
