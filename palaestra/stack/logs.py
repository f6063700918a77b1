"""A running stack's own log directory, never shared with another stack running beside it.

A stack's servers write ``<name>.log`` and ``<name>.spec.json`` into its log directory,
``.palaestra/logs/<stack file's stem>/`` by default. Two stacks started from one directory
(the same file twice, or ``a/stack.yaml`` and ``b/stack.yaml``) would write into the same
files, their lines interleaved. So a stack claims its directory for as long as it runs: an
exclusive ``flock`` on ``.stack.lock`` in it, which the kernel drops when the stack's process
ends, even on ``kill -9``. A default directory another running stack holds is passed over
for ``<stem>-2``, ``<stem>-3``, ...; a ``--log-dir`` another stack holds is refused in one line.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from palaestra.errors import ConfigError

LOCK_NAME = ".stack.lock"
MAX_BESIDE = 100
"""How many stacks of one name may run at once from one directory."""


class LogDirectory:
    """A log directory this process holds (``path``) until ``release`` or its exit."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def claim(cls, base: Path, *, chosen: bool) -> LogDirectory:
        """Hold ``base``, or, unless it was ``chosen`` by the user, the first of
        ``base-2``, ``base-3``, ... that no running stack holds."""
        candidates = (
            [base]
            if chosen
            else [base, *(base.with_name(f"{base.name}-{n}") for n in range(2, MAX_BESIDE + 1))]
        )
        for path in candidates:
            held = cls._try(path)
            if held is not None:
                return held
        if chosen:
            raise ConfigError(
                f"--log-dir {base}: another running stack writes its logs there "
                f"(pid {_holder(base)}); give another directory"
            )
        raise ConfigError(
            f"{base}: {MAX_BESIDE} stacks of this name already run from this directory"
        )

    @classmethod
    def _try(cls, path: Path) -> LogDirectory | None:
        try:
            path.mkdir(parents=True, exist_ok=True)
            fd = os.open(path / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as error:
            raise ConfigError(f"cannot use {path} for the stack's logs: {error.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        return cls(path, fd)

    def release(self) -> None:
        """Let another stack use the directory (its files stay)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _holder(path: Path) -> str:
    """The pid the holder of ``path`` wrote (``?`` if unreadable)."""
    with contextlib.suppress(OSError):
        return (path / LOCK_NAME).read_text().strip() or "?"
    return "?"
