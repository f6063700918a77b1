"""A resumed run refuses a task whose folder changed since its rows were written.

A row of a task that is more than its row (a Harbor task folder: its Dockerfile, its tests)
carries ``task_digest``: ``{path, digest}``, the folder and ``folder_digest`` of it when the
task ran. The run's identity covers the input file, not the folders it points at, so an edited
``tests/test.sh`` would let a resume mix rows scored by two different verifiers in one file.
Before anything is written, ``--resume`` digests each folder its rows name again and refuses,
in one line naming the folder, one that changed (or is gone).

Only lines that hold the field are parsed; an output without it costs one byte search a line.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from palaestra.errors import ConfigError
from palaestra.wire.harbor import folder_digest
from palaestra.wire.rows import TASK_DIGEST

_MARK = f'"{TASK_DIGEST}"'.encode()


def recorded_digests(output: Path) -> dict[str, str]:
    """The folders the rows of ``output`` name, each with the digest its first row recorded."""
    found: dict[str, str] = {}
    if not output.exists():
        return found
    with output.open("rb") as lines:
        for raw in lines:
            if _MARK not in raw:
                continue
            try:
                row = orjson.loads(raw)
            except orjson.JSONDecodeError:  # a torn last line: the resume repairs it
                continue
            stamp = row.get(TASK_DIGEST) if isinstance(row, dict) else None
            if isinstance(stamp, dict):
                path, digest = stamp.get("path"), stamp.get("digest")
                if isinstance(path, str) and isinstance(digest, str):
                    found.setdefault(path, digest)
    return found


def check_task_digests(output: Path) -> None:
    """``ConfigError`` naming the first task folder whose digest is not the one ``output``'s
    rows were written with (in path order)."""
    for path, recorded in sorted(recorded_digests(output).items()):
        folder = Path(path)
        if not folder.is_dir():
            raise ConfigError(
                f"cannot resume: the task folder {path} that rows of {output} ran is gone; "
                f"restore it, or start a new run (--overwrite, or another --output)"
            )
        current = folder_digest(folder)
        if current != recorded:
            raise ConfigError(
                f"cannot resume: the task folder {path} changed since its rows in {output} were "
                f"written ({_short(recorded)} then, {_short(current)} now); restore it, or start "
                f"a new run (--overwrite, or another --output)"
            )


def _short(digest: str) -> str:
    kind, _, hexdigest = digest.partition(":")
    return f"{kind}:{hexdigest[:12]}" if hexdigest else digest[:19]
