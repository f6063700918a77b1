"""A resumed run refuses a task whose folder changed since its rows were written.

A row of a task that is more than its row (a Harbor task folder: its Dockerfile, its tests)
carries ``task_digest``: ``{path, digest}``, the folder and ``folder_digest`` of it when the
task ran. The run's identity covers the input file, not the folders it points at, so an edited
``tests/test.sh`` would let a resume mix rows scored by two different verifiers in one file.
Before anything is written, ``--resume`` digests each folder its rows name again and refuses,
in one line naming the folder, one that changed (or is gone).

A folder is bound by its content, not by where it is: a project moved (or copied) elsewhere
resumes. Each task's folder is looked for where the current input's row of that task says it
is now (its ``task_digest.path``), else where the output's rows recorded it; a folder found
nowhere passes when the current input's row carries the recorded digest (the environment
checks the folder it runs against the row's digest, for each rollout). And the run's identity
compares the input without these paths (``tasks_sha256``), so the rows of the same folders,
written again at their new place, are the same input.

Only lines that hold the field are parsed; an output without it costs one byte search a line.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import orjson

from palaestra.errors import ConfigError
from palaestra.wire.harbor import folder_digest
from palaestra.wire.rows import TASK_DIGEST, TASK_INDEX

_MARK = f'"{TASK_DIGEST}"'.encode()

Stamp = tuple[str, str]
"""(folder path, digest) of a task's ``task_digest``."""


def recorded_digests(output: Path) -> dict[str, str]:
    """The folders the rows of ``output`` name, each with the digest its first row recorded."""
    found: dict[str, str] = {}
    for _, (path, digest) in _stamps(output, indexed=True):
        found.setdefault(path, digest)
    return found


def check_task_digests(output: Path, tasks: Path | None = None) -> None:
    """``ConfigError`` naming the first task folder whose digest is not the one ``output``'s
    rows were written with (in task order). ``tasks``: the current input, whose rows say where
    each task's folder is now."""
    recorded: dict[int, Stamp] = {}
    for index, stamp in _stamps(output, indexed=True):
        recorded.setdefault(index, stamp)
    if not recorded:
        return
    now = dict(_stamps(tasks, indexed=False)) if tasks is not None else {}
    digests: dict[Path, str] = {}
    for index, (path, digest) in sorted(recorded.items()):
        current = now.get(index)
        folder = Path(current[0] if current is not None else path)
        if folder.is_dir():
            if folder not in digests:
                digests[folder] = folder_digest(folder)
            found = digests[folder]
        elif current is not None:
            found = current[1]  # moved out of reach here: the environment checks its folder
        else:
            raise ConfigError(
                f"cannot resume: the task folder {path} that rows of {output} ran is gone; "
                f"restore it, or start a new run (--overwrite, or another --output)"
            )
        if found != digest:
            raise ConfigError(
                f"cannot resume: the task folder {folder} changed since its rows in {output} "
                f"were written ({_short(digest)} then, {_short(found)} now); restore it, or "
                f"start a new run (--overwrite, or another --output)"
            )


def tasks_digest(tasks: Path) -> str | None:
    """SHA-256 of an input whose task rows name their folders (its first line has a
    ``task_digest``), with each folder's path left out: the same tasks wherever their folders
    are. None for any other input (its plain SHA-256 identifies it)."""
    digest = hashlib.sha256()
    with tasks.open("rb") as lines:
        for number, raw in enumerate(lines):
            if _MARK not in raw:
                if number == 0:
                    return None
                digest.update(raw)
                continue
            try:
                row = orjson.loads(raw)
            except orjson.JSONDecodeError:
                digest.update(raw)
                continue
            stamp = row.get(TASK_DIGEST) if isinstance(row, dict) else None
            if isinstance(stamp, dict):
                row[TASK_DIGEST] = {k: v for k, v in stamp.items() if k != "path"}
            digest.update(orjson.dumps(row, option=orjson.OPT_APPEND_NEWLINE))
    return digest.hexdigest()


def _stamps(path: Path, *, indexed: bool) -> Iterator[tuple[int, Stamp]]:
    """(task index, stamp) of each row of ``path`` with a ``task_digest``: the row's
    ``_ng_task_index`` when ``indexed`` (an output's rows), else its place among the file's
    non-blank lines (an input's: how the collector numbers tasks)."""
    if not path.exists():
        return
    with path.open("rb") as lines:
        position = -1
        for raw in lines:
            if not raw.strip():
                continue
            position += 1
            if _MARK not in raw:
                continue
            try:
                row = orjson.loads(raw)
            except orjson.JSONDecodeError:  # a torn last line: the resume repairs it
                continue
            if not isinstance(row, dict):
                continue
            stamp = row.get(TASK_DIGEST)
            if not isinstance(stamp, dict):
                continue
            folder, digest = stamp.get("path"), stamp.get("digest")
            if not (isinstance(folder, str) and isinstance(digest, str)):
                continue
            index = row.get(TASK_INDEX) if indexed else position
            if isinstance(index, int):
                yield index, (folder, digest)


def _short(digest: str) -> str:
    kind, _, hexdigest = digest.partition(":")
    return f"{kind}:{hexdigest[:12]}" if hexdigest else digest[:19]
