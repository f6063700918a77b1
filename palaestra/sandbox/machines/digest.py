"""``folder_digest``: one content digest of a folder, for build caches and task stamps.

The rootfs and Docker providers key their image caches by it, and Harbor task rows are stamped
with it (``palaestra.wire.harbor`` re-exports it), so a resumed run can refuse a task whose
folder changed and a changed Dockerfile folder rebuilds.

A folder digested here is a task author's and is not trusted: it is walked without recursion
(nesting deeper than ``MAX_DEPTH`` is refused), and an entry that is neither a regular file,
a directory nor a symlink (a FIFO, a socket, a device) is refused without being opened, each
in one line naming the path (a ``ConfigError``): opening a FIFO would wait for a writer
forever, and a device has no content to digest.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from palaestra.errors import ConfigError

MAX_DEPTH = 64
"""Directory levels below the folder a digest walks; a deeper folder is refused."""


def folder_digest(folder: str | os.PathLike[str]) -> str:
    """``sha256:<hex>`` over every file under ``folder``: its relative path, whether it is
    executable, and its content (a symlink: its target), in path order. Nothing is excluded:
    any file may be copied into the machine or read by the tests. ``ConfigError`` (one line
    naming the path) for an entry that is no file, directory or symlink, or nesting past
    ``MAX_DEPTH``."""
    root = Path(folder)
    outer = hashlib.sha256()
    for relative, path, info in sorted(walk(root), key=lambda found: found[0]):
        if stat.S_ISLNK(info.st_mode):
            kind, inner = "l", hashlib.sha256(os.readlink(path).encode()).hexdigest()
        else:
            kind = "x" if info.st_mode & stat.S_IXUSR else "f"
            inner = _file_sha256(path, info)
        outer.update(f"{relative}\0{kind}\0{inner}\n".encode())
    return f"sha256:{outer.hexdigest()}"


def walk(root: Path) -> list[tuple[str, Path, os.stat_result]]:
    """Every regular file and symlink under ``root`` (a symlinked directory is not followed):
    its path relative to ``root`` (POSIX), its path, its ``lstat``. Iterative, so no depth
    exhausts the stack; ``ConfigError`` as ``folder_digest`` says."""
    found: list[tuple[str, Path, os.stat_result]] = []
    pending: list[tuple[Path, int]] = [(root, 0)]
    while pending:
        directory, depth = pending.pop()
        if depth > MAX_DEPTH:
            raise ConfigError(
                f"{directory}: nested more than {MAX_DEPTH} directories deep in {root}: refused"
            )
        try:
            with os.scandir(directory) as entries:
                listed = list(entries)
        except OSError as error:
            raise ConfigError(f"{directory}: cannot list it: {error.strerror}") from None
        for entry in listed:
            path = Path(entry.path)
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode):
                pending.append((path, depth + 1))
            elif stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode):
                found.append((path.relative_to(root).as_posix(), path, info))
            else:
                raise ConfigError(
                    f"{path}: {_kind(info.st_mode)} in a task folder: refused (only files, "
                    f"directories and symlinks are copied into a machine)"
                )
    return found


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device node"
    return "not a file"


def _file_sha256(path: Path, seen: os.stat_result) -> str:
    """The content's sha256, read from the file that was ``lstat``-ed as ``seen`` (opened
    without following a link and without blocking; a file swapped for another kind since is
    refused)."""
    digest = hashlib.sha256()
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        raise ConfigError(f"{path}: cannot read it: {error.strerror}") from None
    with os.fdopen(descriptor, "rb") as file:
        now = os.fstat(file.fileno())
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (
            seen.st_dev,
            seen.st_ino,
        ):
            raise ConfigError(f"{path}: changed while it was read: refused")
        for chunk in iter(lambda: file.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
