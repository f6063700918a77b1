"""One collector per output: an exclusive ``flock`` on a lock file beside it.

Two collectors appending to one output would both run the pairs neither had finished (a
second ``--resume`` started beside a running one wrote 568 rows for 300 pairs). The lock is
``flock(LOCK_EX | LOCK_NB)`` on ``<output>.lock``: the kernel releases it when its holder
exits, however it exits (``kill -9`` included), so a stale lock never needs cleaning up. The
file itself stays (deleting it would let a third collector lock a new file while the second
still holds the old one); it holds the pid of the last holder, for the error message.
``flock`` is per host: two machines writing one output over NFS are not kept apart.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType

from palaestra.collection.files import writing
from palaestra.errors import ConfigError


class OutputLock:
    """Held from ``acquire`` until ``release`` (or the process's end)."""

    def __init__(self, fd: int, path: Path) -> None:
        self._fd: int | None = fd
        self.path = path

    @classmethod
    def acquire(cls, lock_path: Path, output: Path) -> OutputLock:
        """Lock ``lock_path`` for writing ``output``; ``ConfigError`` if a collector holds it."""
        with writing(output):
            lock_path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise ConfigError(
                f"{output} is being written by another collector (pid {holder}): wait for "
                f"it to finish, or write to another --output"
            ) from None
        except OSError as error:  # a file system without flock support
            os.close(fd)
            raise ConfigError(f"cannot lock {lock_path}: {error.strerror}") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        return cls(fd, lock_path)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the last descriptor drops the flock
            self._fd = None

    def __enter__(self) -> OutputLock:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()
