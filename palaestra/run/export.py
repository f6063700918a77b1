"""An environment's tasks written as NeMo Gym input JSONL (``palaestra tasks``).

The counterpart of NeMo Evaluator's export (``nel serve --export-data``): the file is what
``palaestra collect --input``, NeMo Gym's ``ng_collect_rollouts`` and NeMo Evaluator's
``gym://HOST:PORT?data=FILE`` (its ``GymDataset``) read. Each row is the task as the
environment made it, with three changes that make every reader see the same task:

- ``responses_create_params.input`` written as a text is written as one user message (NeMo
  Evaluator reads messages from a list only);
- ``idx``, the row's index: a NeMo Evaluator client forwards the row's plain fields with each
  verify, and a ``palaestra serve env ENV --tasks FILE`` server finds its own copy of the task by
  that index (NeMo Evaluator drops list and object fields, which the task may need);
- ``agent_ref``, when ``agent`` is given (NeMo Gym's collector sends each row to the agent it
  names).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from palaestra.collection.assembly import AGENT_REF_TYPE, FoundEnvironment, find
from palaestra.collection.files import writing
from palaestra.collection.generated import write_generated_tasks
from palaestra.collection.tasks import read_tasks
from palaestra.environment.base import Environment
from palaestra.errors import ConfigError
from palaestra.spec import EnvSpec, validated
from palaestra.types import JsonDict
from palaestra.wire.rows import AGENT_REF, PARAMS


def export_tasks(
    env: str | Environment | type[Environment],
    output: str | os.PathLike[str],
    *,
    num_tasks: int | None = None,
    seed: int = 0,
    env_args: Mapping[str, Any] | None = None,
    agent: str | None = None,
    tasks: Path | None = None,
) -> int:
    """Write ``env``'s tasks to ``output`` as NeMo Gym input JSONL; the number written.

    The example tasks, or ``num_tasks`` generated with ``seed`` (the same seed, the same file,
    as ``collect --num-tasks``), or the rows of ``tasks`` (a selection of the environment's
    own, as ``palaestra tasks --filter`` makes). ``agent`` names the agent each row's
    ``agent_ref`` points at.
    An unknown environment, a generator that cannot, or a bad example row is a one-line
    ``ConfigError``; the file is written whole (beside, then renamed) or not at all.
    """
    found = found_environment(env, env_args)
    path = Path(output)
    path.parent.mkdir(parents=True, exist_ok=True)
    generated = path.with_name(f"{path.name}.{os.getpid()}.generated")
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        source = tasks if tasks is not None else task_source(found, num_tasks, seed, generated)
        with writing(path):
            written = 0
            with temporary.open("wb") as file:
                for idx, row in enumerate(task_rows(source)):
                    file.write(orjson.dumps(nemo_gym_row(row, idx, agent), option=_LINE))
                    written += 1
            os.replace(temporary, path)
    finally:
        generated.unlink(missing_ok=True)
        temporary.unlink(missing_ok=True)
    return written


def nemo_gym_row(row: JsonDict, idx: int, agent: str | None = None) -> JsonDict:
    """``row`` as every NeMo Gym reader reads it (see the module docstring)."""
    params = row[PARAMS]
    if isinstance(params.get("input"), str):
        params = {**params, "input": [{"role": "user", "content": params["input"]}]}
    exported: JsonDict = {**row, PARAMS: params, "idx": idx}
    if agent is not None:
        exported[AGENT_REF] = {"type": AGENT_REF_TYPE, "name": agent}
    return exported


_LINE = orjson.OPT_APPEND_NEWLINE


def found_environment(
    env: str | Environment | type[Environment], env_args: Mapping[str, Any] | None
) -> FoundEnvironment:
    """The environment an export names (a name, a class or an instance), with its arguments."""
    fields: dict[str, Any] = {"args": dict(env_args or {})}
    if isinstance(env, str):
        fields["name"] = env
    else:
        fields["name"], fields["environment"] = getattr(env, "name", None), env
    found = find(validated(EnvSpec, fields, "env"))
    assert found is not None
    return found


def task_source(found: FoundEnvironment, num_tasks: int | None, seed: int, generated: Path) -> Path:
    """The tasks to export: ``num_tasks`` generated from ``seed`` into ``generated``, else the
    example tasks; a one-line ``ConfigError`` when the environment has neither."""
    if num_tasks is not None:
        return write_generated_tasks(found.build(), count=num_tasks, seed=seed, path=generated)
    if found.example_tasks is None:
        raise ConfigError(
            f"environment '{found.name}' has no example tasks: pass --num-tasks to generate"
        )
    return found.example_tasks


def task_rows(path: Path) -> Iterator[JsonDict]:
    """The task rows of ``path``; its first bad line as a one-line ``ConfigError``."""
    for line in read_tasks(path):
        if line.error is not None:
            raise ConfigError(line.error.describe())
        yield line.row
