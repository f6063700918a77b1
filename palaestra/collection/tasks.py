"""Reading tasks: lazily, one line at a time, with errors that name file, line and field."""

from __future__ import annotations

import hashlib
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from palaestra.errors import ConfigError, InputError
from palaestra.types import JsonDict
from palaestra.wire.jsonl import NOT_OBJECT, BadLine, read_rows
from palaestra.wire.rows import PARAMS

HASH_BLOCK = 1 << 20


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
    if limit is not None and limit <= 0:
        return
    name = str(path)
    for index, (number, row) in enumerate(read_rows(path, path=name)):
        yield task_line(row, index=index, path=name, line=number)
        if index + 1 == limit:  # stop before parsing a line past the limit
            return


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


@dataclass(frozen=True, slots=True)
class InputScan:
    """What a run knows of its input file before it starts: for the progress bar and identity."""

    path: Path
    tasks: int
    """Task lines (non-blank), at most ``limit``."""
    size: int
    mtime_ns: int
    sha256: str


def check_input_file(path: Path) -> None:
    """``ConfigError`` unless ``path`` is a regular file the run can read twice.

    Tasks are read twice (counted first, then run) and again by ``--resume``, so standard
    input, a pipe or a device cannot be the input: save the tasks to a file first.
    """
    if str(path) == "-":
        raise ConfigError(
            "--input - (standard input) is not supported: a run reads its tasks more than "
            "once (and again on --resume); save them to a file and pass its path"
        )
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise ConfigError(f"input file not found: {path}") from None
    except OSError as error:
        raise ConfigError(f"cannot read input file {path}: {error.strerror}") from None
    if not stat.S_ISREG(mode):
        raise ConfigError(
            f"input {path} is not a regular file (a pipe, device or directory): a run reads "
            f"its tasks more than once (and again on --resume); save them to a file first"
        )


def scan_input(path: Path, *, limit: int | None = None, known: JsonDict | None = None) -> InputScan:
    """Count the tasks of ``path`` and hash its content, in one read of the file.

    The hash (SHA-256 of every byte, about 1.6 GB/s here: the read costs more) identifies the
    input for ``--resume``. ``known`` is the input as an earlier run recorded it
    (``size``, ``mtime_ns``, ``sha256``): when size and modification time still match, its hash
    is trusted and only the tasks are counted, so resuming a huge file does not hash it again.
    ``ConfigError`` for a file with no task line, or with binary data (a NUL byte: JSON text
    never holds one), before any warning per line could flood the console.
    """
    check_input_file(path)
    facts = path.stat()
    reuse = (
        known is not None
        and known.get("size") == facts.st_size
        and known.get("mtime_ns") == facts.st_mtime_ns
        and isinstance(known.get("sha256"), str)
    )
    digest = None if reuse else hashlib.sha256()
    tasks = 0
    with path.open("rb") as lines:
        for number, raw in enumerate(lines, start=1):
            if digest is not None:
                digest.update(raw)
            if b"\0" in raw:
                raise ConfigError(
                    f"{path}:{number}: binary data (a NUL byte): --input must be a JSONL "
                    f"file of tasks, one JSON object per line"
                )
            if raw.strip():
                tasks += 1
                if limit is not None and tasks >= limit:
                    break
        if digest is not None:
            while block := lines.read(HASH_BLOCK):
                digest.update(block)
    if tasks == 0:
        raise ConfigError(f"{path} holds no tasks (it is empty or only blank lines)")
    sha256 = str(known["sha256"]) if reuse and known else digest.hexdigest() if digest else ""
    return InputScan(path, tasks, facts.st_size, facts.st_mtime_ns, sha256)


def task_line(row: JsonDict | BadLine, *, index: int, path: str, line: int) -> TaskLine:
    """The task line of a row as ``read_rows`` yields it: the task, or why it is not one.

    A cut-short last line is invalid JSON like any other: a task file is written by its
    user, not by a run that could have been killed.
    """
    if isinstance(row, BadLine):
        if row.problem == NOT_OBJECT:
            reason = f"a task must be a JSON object, got {row.detail}"  # as task_problem says
        else:
            reason = f"not valid JSON ({row.detail})"
        return TaskLine(index, line, {}, row.error(reason))
    problem = task_problem(row)
    if problem is not None:
        field, reason = problem
        return TaskLine(index, line, {}, InputError(reason, path=path, line=line, field=field))
    return TaskLine(index, line, row)


def task_problem(row: object) -> tuple[str | None, str] | None:
    """What makes ``row`` not a task, as (field, reason); None when it is one."""
    if not isinstance(row, dict):
        return None, f"a task must be a JSON object, got {type(row).__name__}"
    params = row.get(PARAMS)
    if params is None:
        return PARAMS, "missing (every task needs its model request)"
    if not isinstance(params, dict):
        return PARAMS, "must be an object"
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


def load_dataset(path: Path | None) -> list[JsonDict]:
    """The tasks a server offers by index; a bad line is a ``ConfigError`` naming it."""
    if path is None:
        return []
    rows: list[JsonDict] = []
    for line in read_tasks(path):
        if line.error is not None:
            raise ConfigError(line.error.describe())
        rows.append(line.row)
    return rows
