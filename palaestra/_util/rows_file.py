"""Task rows written once under a name made from their content, in palaestra's cache.

Environments that turn another source (Harbor folders, an ORS server's split) into task rows
write them here: the same tasks give the same file, so a resumed run reads the same input.
"""

from __future__ import annotations

import hashlib
import os
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
