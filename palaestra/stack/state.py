"""Where running stacks are recorded, so ``palaestra status`` finds them from any directory.

Each ``palaestra run`` writes ``<pid>.json`` (head URL, stack file, directory, pid; never the
token) into a per-user directory: ``$PALAESTRA_STATE_DIR``, else
``$XDG_STATE_HOME/palaestra/stacks``, else ``~/.local/state/palaestra/stacks``. It removes the
file when it stops; a record whose process is gone (a ``kill -9``) is removed by the next reader.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import orjson

from palaestra._util.processes import alive

STATE_ENV = "PALAESTRA_STATE_DIR"


@dataclass(frozen=True, slots=True)
class StackRecord:
    head: str
    stack: Path
    cwd: Path
    pid: int
    path: Path


def state_dir(environ: Mapping[str, str]) -> Path:
    if environ.get(STATE_ENV):
        return Path(environ[STATE_ENV])
    base = environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "palaestra" / "stacks"


def record_stack(head: str, stack_file: Path, environ: Mapping[str, str]) -> Path:
    """Record this process's stack; returns the file to remove when the stack stops."""
    directory = state_dir(environ)
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = directory / f"{os.getpid()}.json"
    facts = {
        "head": head,
        "stack": str(stack_file.resolve()),
        "cwd": str(Path.cwd()),
        "pid": os.getpid(),
    }
    partial = path.with_suffix(".tmp")
    partial.write_bytes(orjson.dumps(facts))
    partial.replace(path)  # a reader never sees half a record
    return path


def running_stacks(environ: Mapping[str, str]) -> list[StackRecord]:
    """The stacks whose supervisor is alive, those started in this directory first."""
    found = []
    for path in sorted(state_dir(environ).glob("*.json")):
        try:
            facts = orjson.loads(path.read_bytes())
            record = StackRecord(
                str(facts["head"]),
                Path(facts["stack"]),
                Path(facts["cwd"]),
                int(facts["pid"]),
                path,
            )
        except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            continue  # being written, or not ours
        if alive(record.pid):
            found.append(record)
        else:
            with contextlib.suppress(OSError):
                path.unlink()  # its supervisor was killed without cleaning up
    here = Path.cwd()
    return sorted(found, key=lambda r: r.cwd != here)
