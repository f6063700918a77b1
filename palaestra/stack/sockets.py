"""The private directory of a stack's Unix sockets, and the removal of dead stacks' ones.

A stack's directory is ``<tmp>/palaestra-stack-<supervisor pid>-<random>``, mode 0700 (only
this user may connect to the sockets in it). A supervisor stopped normally removes it; one
killed with SIGKILL cannot, so each starting supervisor removes the directories that dead
stacks of this user left, and leftovers never pile up.

What proves a stack dead is its lock, not its pid: the supervisor holds an ``flock`` on its
directory for as long as it lives, and the kernel drops it when the process dies, however it
dies. A pid alone would misjudge a stack in another pid namespace sharing ``/tmp`` (a
container's) as dead, and removing a live stack's directory cuts its agents off their servers.
The pid in the name covers only the instant between making the directory and locking it (its
owner is alive then), and tells a reader of ``/tmp`` whose directory it is.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import tempfile
from pathlib import Path

from palaestra._util.processes import alive

PREFIX = "palaestra-stack-"
_PID_MAX = 1 << 22
"""Linux's ceiling on pids: a larger number in a name is not a supervisor's."""


class SocketDirectory:
    """A stack's socket directory, locked by this process from ``make`` until ``remove``."""

    def __init__(self, path: Path, lock: int | None) -> None:
        self.path = path
        self._lock = lock

    @classmethod
    def make(cls, parent: Path | None = None) -> SocketDirectory:
        """Remove dead stacks' directories in ``parent`` (the temporary directory), then make
        and lock this stack's. The path stays short: a Unix socket's is at most 107 bytes."""
        parent = parent if parent is not None else Path(tempfile.gettempdir())
        remove_leftovers(parent)
        path = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=parent))
        return cls(path, _locked(path))

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        if self._lock is not None:
            os.close(self._lock)  # only now: a sweep must not find it unlocked before
            self._lock = None


def remove_leftovers(parent: Path) -> None:
    """Remove each stack directory of this user in ``parent`` whose owner is gone."""
    with contextlib.suppress(OSError), os.scandir(parent) as entries:
        for entry in entries:
            owner = _owner(entry.name)
            if owner is None or alive(owner):
                continue
            with contextlib.suppress(OSError):
                found = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(found.st_mode) and found.st_uid == os.getuid():
                    _remove_unless_locked(Path(entry.path))


def _owner(name: str) -> int | None:
    """The supervisor pid a stack directory's name carries, else None (not one of ours)."""
    if not name.startswith(PREFIX):
        return None
    pid = name[len(PREFIX) :].partition("-")[0]
    return int(pid) if pid.isdigit() and 0 < int(pid) <= _PID_MAX else None


def _locked(path: Path) -> int | None:
    """A descriptor holding ``path``'s lock; None where the file system has no ``flock`` (the
    directory is then kept by every sweep: one that cannot be locked is never taken)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)  # not inherited by the servers
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _remove_unless_locked(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises while its stack runs
        shutil.rmtree(path, ignore_errors=True)
    finally:
        os.close(fd)
