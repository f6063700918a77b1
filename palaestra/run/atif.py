"""A run's rollouts as ATIF trajectory files (``palaestra export --format atif``), and back.

``export_atif`` writes every rollout of a run (its rollouts file and the failures file beside
it) as one ATIF trajectory file each (``palaestra.wire.atif``), in a directory:
``task<T>_rollout<R>.json`` for a scored rollout, ``..._failed.json`` for a failed one (a
second failure of the same rollout, from a retry, gets ``_2``, ...).

``as_run`` is the way back for the readers of runs (``palaestra view``, ``verify``,
``report``): the format is told per file, by its content. A rollouts JSONL file is the run
itself; an ATIF trajectory (a ``.json`` file holding one, a JSONL file of them, or a directory
of ``.json`` files) is decoded into a rollouts file and its failures file in a scratch
directory, named after it. A file that is neither is one ``ConfigError`` line naming it.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import orjson

from palaestra.collection.files import RunFiles
from palaestra.errors import ConfigError, InputError
from palaestra.types import JsonDict
from palaestra.wire.atif import from_trajectory, is_trajectory, to_trajectory
from palaestra.wire.jsonl import TORN, BadLine, read_rows
from palaestra.wire.protocol import is_failure_row
from palaestra.wire.rows import FAILURE, PARAMS, RESPONSE, REWARD, ROLLOUT_INDEX, TASK_INDEX

Format = Literal["rows", "atif"]
_DIGITS = re.compile(r"(\d+)")
_ROW_FIELDS = frozenset({RESPONSE, PARAMS, FAILURE, TASK_INDEX, REWARD})
"""A JSON object with none of these is not a row (of a rollouts or a failures file)."""


@dataclass(frozen=True, slots=True)
class AtifExport:
    """What ``export_atif`` wrote."""

    directory: Path
    scored: int
    failed: int
    torn_lines: tuple[str, ...] = ()
    """``file:line`` of a last line cut short (a run killed mid-write): not exported."""


def export_atif(rollouts: Path, output: Path) -> AtifExport:
    """Write every rollout of the run ``rollouts`` (and its failures file) as ATIF files in
    the directory ``output`` (made; refused when it already holds files)."""
    failures = RunFiles(rollouts).failures
    if not rollouts.is_file() and not failures.is_file():
        raise ConfigError(f"rollouts file not found: {rollouts}")
    if output.exists() and (not output.is_dir() or any(output.iterdir())):
        raise ConfigError(f"{output} exists and is not an empty directory: name a new one")
    output.mkdir(parents=True, exist_ok=True)
    names: set[str] = set()
    counts = {"scored": 0, "failed": 0}
    torn: list[str] = []
    for path in (rollouts, failures):
        if not path.is_file():
            continue
        for row in _rows(path, torn):
            failed = is_failure_row(row)
            name = _name(row, failed, names)
            document = orjson.dumps(to_trajectory(row))
            temporary = output / f".{name}.tmp"
            temporary.write_bytes(document + b"\n")
            os.replace(temporary, output / name)
            counts["failed" if failed else "scored"] += 1
    return AtifExport(output, counts["scored"], counts["failed"], tuple(torn))


def _rows(path: Path, torn: list[str]) -> Iterator[JsonDict]:
    for number, row in read_rows(path):
        if isinstance(row, BadLine):
            if row.problem == TORN:
                torn.append(f"{path}:{number}")
                return
            raise row.error()
        yield row


def _name(row: JsonDict, failed: bool, taken: set[str]) -> str:
    stem = f"task{row.get(TASK_INDEX)}_rollout{row.get(ROLLOUT_INDEX)}"
    stem += "_failed" if failed else ""
    name, copy = f"{stem}.json", 1
    while name in taken:
        copy += 1
        name = f"{stem}_{copy}.json"
    taken.add(name)
    return name


# --- reading ---------------------------------------------------------------------------------


def run_format(path: Path) -> Format:
    """``rows`` or ``atif``, from what ``path`` holds; a one-line ``ConfigError`` otherwise.

    A path that does not exist, or an empty file, is ``rows``: the run's reader says what is
    missing."""
    if not path.exists():
        return "rows"
    if path.is_dir():
        if any(path.glob("*.json")):
            return "atif"
        raise ConfigError(f"{path}: a directory with no ATIF trajectory (.json) files")
    with path.open("rb") as file:
        first_line = next((line for line in file if line.strip()), b"")
    if not first_line:
        return "rows"
    first = _first_value(path, first_line)
    if is_trajectory(first):
        return "atif"
    if isinstance(first, dict) and not _ROW_FIELDS.isdisjoint(first):
        return "rows"
    raise ConfigError(
        f"{path}: neither a rollouts JSONL file nor an ATIF trajectory "
        f"(its first line is not a rollout row, nor is the file one trajectory)"
    )


def _first_value(path: Path, first_line: bytes) -> object:
    """The file's first non-blank line as a JSON value, else the whole file as one."""
    try:
        return orjson.loads(first_line)
    except orjson.JSONDecodeError:
        pass
    try:
        return orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError:
        return None


def as_run(path: Path, scratch: Path) -> Path:
    """The rollouts file ``path`` is (itself), or the one its ATIF trajectories decode into
    (written in ``scratch`` with its failures file beside it)."""
    if run_format(path) == "rows":
        return path
    scratch.mkdir(parents=True, exist_ok=True)
    run = scratch / f"{path.name.removesuffix('.json').removesuffix('.jsonl')}.jsonl"
    scored: list[bytes] = []
    failed: list[bytes] = []
    for row in read_trajectories(path):
        (failed if is_failure_row(row) else scored).append(orjson.dumps(row) + b"\n")
    run.write_bytes(b"".join(scored))
    failures = RunFiles(run).failures
    failures.unlink(missing_ok=True)
    if failed:
        failures.write_bytes(b"".join(failed))
    return run


def read_trajectories(path: Path) -> Iterator[JsonDict]:
    """The rows the ATIF trajectories at ``path`` record: a file of one, a JSONL file of them,
    or a directory of ``.json`` files (in name order, numbers as numbers). A document that is
    not a trajectory is one ``InputError`` naming its file (and line)."""
    files = sorted(path.glob("*.json"), key=_natural) if path.is_dir() else [path]
    count = 0
    for file in files:
        for line, document in _documents(file):
            if not is_trajectory(document):
                raise InputError(
                    "not an ATIF trajectory (no schema_version 'ATIF-...' and steps)",
                    path=str(file),
                    line=line,
                )
            assert isinstance(document, dict)
            yield from_trajectory(document, task_index=count)
            count += 1


def _natural(path: Path) -> list[tuple[int, str]]:
    """``task2`` before ``task10``: runs of digits compare as numbers."""
    return [(int(part), "") if part.isdigit() else (-1, part) for part in _DIGITS.split(path.name)]


def _documents(file: Path) -> Iterator[tuple[int | None, object]]:
    raw = file.read_bytes()
    try:
        yield None, orjson.loads(raw)
        return
    except orjson.JSONDecodeError:
        pass
    for number, row in read_rows(file):
        if isinstance(row, BadLine):
            raise row.error()
        yield number, row


@contextmanager
def readable_runs(paths: Sequence[Path]) -> Iterator[list[Path]]:
    """The rollouts files ``paths`` are (``as_run`` of each), ATIF ones decoded into a scratch
    directory that lives as long as the ``with`` block."""
    with tempfile.TemporaryDirectory(prefix="palaestra-atif-") as scratch:
        yield [as_run(path, Path(scratch) / str(number)) for number, path in enumerate(paths)]
