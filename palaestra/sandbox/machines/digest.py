"""``folder_digest``: one content digest of a folder, for build caches and task stamps.

The rootfs and Docker providers key their image caches by it, and Harbor task rows are stamped
with it (``palaestra.wire.harbor`` re-exports it), so a resumed run can refuse a task whose
folder changed and a changed Dockerfile folder rebuilds.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path


def folder_digest(folder: str | os.PathLike[str]) -> str:
    """``sha256:<hex>`` over every file under ``folder``: its relative path, whether it is
    executable, and its content (a symlink: its target), in path order. Nothing is excluded:
    any file may be copied into the machine or read by the tests."""
    root = Path(folder)
    outer = hashlib.sha256()
    for path in sorted(_files(root), key=lambda p: p.relative_to(root).as_posix()):
        relative = path.relative_to(root).as_posix()
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            kind, inner = "l", hashlib.sha256(os.readlink(path).encode()).hexdigest()
        else:
            kind = "x" if info.st_mode & stat.S_IXUSR else "f"
            inner = _file_sha256(path)
        outer.update(f"{relative}\0{kind}\0{inner}\n".encode())
    return f"sha256:{outer.hexdigest()}"


def _files(root: Path) -> list[Path]:
    """Every file and symlink under ``root`` (a symlinked directory is not followed)."""
    found: list[Path] = []
    for directory, subdirectories, names in os.walk(root):
        base = Path(directory)
        found.extend(base / name for name in names)
        found.extend(base / name for name in subdirectories if (base / name).is_symlink())
    return found


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for chunk in iter(lambda: file.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
