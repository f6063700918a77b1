"""Facts about other processes of this machine."""

from __future__ import annotations

import ctypes
import os
import signal
from collections.abc import Callable

PR_SET_PDEATHSIG = 1


def alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (one of another user's counts: signalling it is refused)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def started(pid: int) -> int | None:
    """When process ``pid`` started, in clock ticks after boot (``/proc/PID/stat``); ``None``
    when that cannot be read (no such process, one ``/proc`` hides, no ``/proc``). With its pid
    it names one process: a pid the kernel hands out again comes with a later start."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            # Fields after the parenthesised name, which may hold anything: starttime is 22nd.
            return int(stat.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def same_process(pid: int, start: int) -> bool:
    """Whether ``pid`` is still the process that started at ``start`` (see ``started``);
    where its start cannot be read, whether a process ``pid`` exists (see ``alive``)."""
    now = started(pid)
    return alive(pid) if now is None else now == start


def pid_namespace() -> int | None:
    """This process's pid namespace (its inode number), whose pids ``alive`` and ``started``
    look up; ``None`` without ``/proc``."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return None


def die_with(parent: int) -> Callable[[], None]:
    """A ``preexec_fn``: the child gets SIGKILL when ``parent`` (this process) dies."""

    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up here: no dlopen after fork

    def arrange() -> None:  # runs in the forked child, before exec
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return arrange
