"""Runs one shell command whose every process lives no longer than the process that asked for it.

``python -I launcher.py PARENT_PID GRACE COMMAND`` is how ``palaestra.remote.managed`` starts an
environment server command. It imports nothing of palaestra (it is run by its path, so it starts
in a few milliseconds) and does this:

- it becomes a *subreaper* (``PR_SET_CHILD_SUBREAPER``): a process the command starts and
  leaves behind (``setsid``, a daemon's double fork) is reparented to it, not to init, so it
  is still found among its descendants (``/proc``'s parent links);
- it runs ``/bin/sh -c COMMAND`` with ``/dev/null`` as input, its own output passed on;
- it stops the command's every descendant, whatever group or session it moved to (SIGTERM,
  then SIGKILL after ``GRACE`` seconds), when any of these happens: its standard input, a pipe
  whose other end only the parent holds, reads end of file (the parent died, even by
  ``kill -9``); it receives SIGTERM, SIGINT or SIGHUP (the parent stopping it, or the kernel's
  ``PR_SET_PDEATHSIG`` when the parent dies); the command's first process exits (a command
  that exits is the server's exit, as before);
- it exits with the command's status (killed by the same signal when a signal ended it), or
  143 when stopped.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import sys
import time

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_STOPS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_STOPPED = 128 + signal.SIGTERM


def descendants(root: int) -> list[int]:
    """The live (not zombie) processes below ``root``, by ``/proc``'s parent links."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if fields[0] != b"Z":
            children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    frontier = [root]
    while frontier:
        below = children.get(frontier.pop(), [])
        found.extend(below)
        frontier.extend(below)
    return found


def _reap(first: int, status: list[int]) -> None:
    """Reap every exited child; ``first``'s exit status goes to ``status``."""
    while True:
        try:
            pid, code = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid == first:
            status.append(os.waitstatus_to_exitcode(code))


def _wait_all(first: int, status: list[int]) -> None:
    """Wait for every child left (all were signalled): ``first``'s status goes to ``status``."""
    while True:
        try:
            pid, code = os.waitpid(-1, 0)
        except ChildProcessError:
            return
        if pid == first:
            status.append(os.waitstatus_to_exitcode(code))


def _signal_all(pids: list[int], signum: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)


def stop_tree(first: int, status: list[int], grace: float) -> None:
    """SIGTERM to every descendant; SIGKILL to those left after ``grace`` seconds, until none
    is left (one forked meanwhile is reparented here and found on the next pass)."""
    me = os.getpid()
    _signal_all(descendants(me), signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        _reap(first, status)
        if not descendants(me):
            return
        time.sleep(0.02)
    for _ in range(1000):
        left = descendants(me)
        if not left:
            return
        _signal_all(left, signal.SIGKILL)
        time.sleep(0.005)
        _reap(first, status)


def main(argv: list[str]) -> int:
    parent, grace, command = int(argv[1]), float(argv[2]), argv[3]
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # without it: only unmoved descendants
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the kernel was asked to tell
        return _STOPPED
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    for signum in (*_STOPS, signal.SIGCHLD):
        signal.signal(signum, lambda *_: None)  # the wakeup fd says which arrived
    first = os.posix_spawn(
        "/bin/sh",
        ["/bin/sh", "-c", command],
        os.environ,
        file_actions=[(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)],
        setsigdef=(signal.SIGPIPE, signal.SIGXFSZ, *_STOPS, signal.SIGCHLD),
    )
    status: list[int] = []
    stopped = False
    watched = [sys.stdin.fileno(), wake_read]
    while not status and not stopped:
        _reap(first, status)
        if status:
            break
        readable, _, _ = select.select(watched, [], [], 1.0)
        if sys.stdin.fileno() in readable and not os.read(sys.stdin.fileno(), 512):
            stopped = True  # end of file: the parent is gone
        if wake_read in readable:
            arrived = os.read(wake_read, 512)
            stopped = stopped or any(signum in arrived for signum in _STOPS)
    stop_tree(first, status, grace)
    # Wait for every child to be reaped: a threaded process whose first thread is already a
    # zombie is not reapable until its other threads are gone. Bounded by an alarm.
    signal.alarm(int(grace) + 5)
    _wait_all(first, status)
    if stopped or not status:
        return _STOPPED
    if status[0] < 0:  # killed by a signal: end the same way, so the parent sees the same
        with contextlib.suppress(OSError, ValueError):  # SIGKILL's cannot be set
            signal.signal(-status[0], signal.SIG_DFL)
        os.kill(os.getpid(), -status[0])
    return status[0]


if __name__ == "__main__":
    sys.exit(main(sys.argv))
