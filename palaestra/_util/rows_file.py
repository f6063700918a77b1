"""Task rows written once under a name made from their content, in palaestra's cache.

Environments that turn another source (Harbor folders, an ORS server's split) into task rows
write them here: the same tasks give the same file, so a resumed run reads the same input.
Folders made from shipped data (an archive unpacked, a manifest's line written out) are made
once the same way (``made_once``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path


def content_named(data: bytes, directory: Path) -> Path:
    """``data`` as ``directory/tasks-<digest>.jsonl`` (kept if already there, else written
    beside and renamed, so a reader never sees half a file)."""
    path = directory / f"tasks-{hashlib.sha256(data).hexdigest()[:20]}.jsonl"
    if path.is_file() and path.read_bytes() == data:
        return path
    directory.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_bytes(data)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    return path


def cache_directory(name: str) -> Path:
    """``$XDG_CACHE_HOME/palaestra/<name>`` (``~/.cache`` when the variable is unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "palaestra" / name


def made_once(target: Path, make: Callable[[Path], object]) -> Path:
    """``target``, a directory: when it is not there yet, ``make(path)`` writes it at a path
    that does not exist yet, in a new directory beside ``target`` (``.<name>.<random>.partial``),
    and it is then renamed to ``target``. Processes making it at once all end with the whole
    directory (one rename wins, the others drop their copies), and a reader never sees half
    of one. What ``make`` raises is raised, its copy dropped."""
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(
        tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
    )
    try:
        made = scratch / target.name
        make(made)
        made.chmod(0o755)
        try:
            os.rename(made, target)
        except OSError:
            if not target.is_dir():  # not another process's rename winning over this one
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target
