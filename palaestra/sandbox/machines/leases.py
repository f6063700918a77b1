"""Leases: every box names its owner in a file from before it exists until after it is gone.

A lease is ``<runtime>/<box id>.lease``, JSON: the owner's pid, its start time (clock ticks
after boot, ``/proc/PID/stat``) and pid namespace, the box's directory, its mount points and
its cgroups. It is written (and synced) *before* the box's directory, mount or cgroup
is made and removed only after all of them are gone, so whatever state a killed collector
left, a lease names it. ``reap`` (run when a provider starts) tears down the boxes of every
owner that is gone (a pid that is no longer the process that started at that time): their
processes are killed (through the box's cgroups), their mounts detached, their directories
removed, then the lease. A lease of another pid namespace is left alone (its owner cannot be
judged from here), as is one that cannot be read yet (being written).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import logging
import os
import signal
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from palaestra._util.processes import alive, pid_namespace, same_process, started
from palaestra.sandbox.workdir import remove_tree

log = logging.getLogger("palaestra.sandbox.machines")

SUFFIX = ".lease"
_MNT_DETACH = 2


@dataclass(slots=True)
class Lease:
    """What one box holds on this machine, and who holds it."""

    box: str
    directory: str
    pid: int = field(default_factory=os.getpid)
    start: int | None = field(default_factory=lambda: started(os.getpid()))
    namespace: int | None = field(default_factory=pid_namespace)
    mounts: list[str] = field(default_factory=list)
    also: list[str] = field(default_factory=list)
    """More directories to remove (a build step's mount point, apart from its layer)."""
    cgroups: list[str] = field(default_factory=list)

    def path(self, runtime: Path) -> Path:
        return runtime / f"{self.box}{SUFFIX}"

    def write(self, runtime: Path) -> None:
        """Write (or rewrite) the lease durably, atomically."""
        target = self.path(runtime)
        partial = target.with_name(f".{target.name}.part")
        with open(partial, "w") as handle:
            json.dump(asdict(self), handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, target)

    def owner_gone(self) -> bool:
        """Whether the owner is known to be gone (never for another pid namespace's)."""
        if self.namespace is not None and self.namespace != pid_namespace():
            return False
        if self.start is None:
            return not alive(self.pid)
        return not same_process(self.pid, self.start)


def read(path: Path) -> Lease | None:
    """The lease at ``path``; fields it does not know are ignored (a lease another version
    wrote is still reaped), ``None`` if it cannot be read."""
    try:
        data = json.loads(path.read_text())
        if isinstance(data.get("cgroup"), str):  # as the first leases named one cgroup
            data["cgroups"] = [*data.get("cgroups", []), data["cgroup"]]
        known = {name: value for name, value in data.items() if name in Lease.__dataclass_fields__}
        return Lease(**known)
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def tear_down(lease: Lease, runtime: Path) -> None:
    """Kill the box's processes, detach its mounts, remove its directory and cgroups, then the
    lease. Safe to repeat; what cannot be removed yet (a busy mount, a cgroup that keeps a
    process) keeps the lease, for the next ``reap``.

    A command its owner was starting when it died may join the box's cgroups only after the
    first kill (the head of its launch chain was still running): each cgroup is killed again
    until it can be removed, and once it is gone nothing can join it (the join fails and
    the chain ends before it runs anything)."""
    cgroups = [Path(cgroup) for cgroup in lease.cgroups]
    for cgroup in cgroups:
        kill_cgroup(cgroup)
    for point in lease.mounts:
        unmount(Path(point))
    left = [point for point in lease.mounts if _mounted(Path(point))]
    if left:  # never remove a tree with a file system still mounted in it
        log.warning("box %s: %s still mounted; its lease is kept", lease.box, ", ".join(left))
        return
    for directory in (Path(lease.directory), *map(Path, lease.also)):
        if directory.exists():
            remove_tree(directory)
    busy = [str(cgroup) for cgroup in cgroups if not _remove_cgroup(cgroup)]
    if busy:
        log.warning("box %s: cgroups %s keep processes; its lease is kept", lease.box, busy)
        return
    with contextlib.suppress(FileNotFoundError):
        lease.path(runtime).unlink()


def reap(runtime: Path) -> int:
    """Tear down every box in ``runtime`` whose owner is gone; how many."""
    count = 0
    with contextlib.suppress(FileNotFoundError):
        for path in sorted(runtime.glob(f"*{SUFFIX}")):
            lease = read(path)
            if lease is None or not lease.owner_gone():
                continue
            try:
                tear_down(lease, runtime)
            except OSError as error:
                log.warning("box %s could not be reaped: %s", lease.box, error)
                continue
            count += 1
    return count


def kill_cgroup(path: Path) -> None:
    """SIGKILL every process in the cgroup ``path`` until none is left (a fork may race;
    where the kernel has ``cgroup.kill``, it kills them all at once, forks included)."""
    with contextlib.suppress(OSError):
        (path / "cgroup.kill").write_text("1")
    for _ in range(200):
        try:
            pids = [int(pid) for pid in (path / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)


def emptied(path: Path, deadline: float) -> bool:
    """Wait (until ``deadline``, a ``time.monotonic``) until no process of the cgroup ``path``
    exists any more, not even one still exiting (``cgroup.events``, where the kernel has it:
    a killed process leaves ``cgroup.procs`` before its namespaces are gone); whether so."""
    while True:
        try:
            events = (path / "cgroup.events").read_text().split()
            empty = "populated" in events and events[events.index("populated") + 1] == "0"
        except FileNotFoundError:
            try:
                empty = not (path / "cgroup.procs").read_text().split()
            except FileNotFoundError:
                return True
        except (OSError, IndexError):
            empty = False
        if empty:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)


def _remove_cgroup(path: Path, tries: int = 250) -> bool:
    """Remove an emptied cgroup, killing what is (or comes) in it meanwhile; whether it is
    gone. Killed processes keep it busy for a moment while they exit."""
    for _ in range(tries):
        try:
            path.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            kill_cgroup(path)
            time.sleep(0.02)
    return False


def unmount(point: Path) -> None:
    """Detach the file system mounted at ``point`` (if any)."""
    libc = ctypes.CDLL(None, use_errno=True)
    while _mounted(point):
        if libc.umount2(str(point).encode(), _MNT_DETACH) != 0:
            error = ctypes.get_errno()
            log.warning("cannot unmount %s: %s", point, os.strerror(error))
            return


def unmount_now(point: Path, deadline: float) -> None:
    """Unmount ``point`` for real (not detached: nothing may still use it after this),
    retrying while it is busy until ``deadline`` (a ``time.monotonic``); ``OSError`` if it
    stays busy."""
    libc = ctypes.CDLL(None, use_errno=True)
    while _mounted(point):
        if libc.umount2(str(point).encode(), 0) == 0:
            continue
        error = ctypes.get_errno()
        if error != errno.EBUSY or time.monotonic() > deadline:
            raise OSError(error, f"cannot unmount {point}: {os.strerror(error)}")
        time.sleep(0.01)


def _mounted(point: Path) -> bool:
    """Whether something is mounted exactly at ``point`` (``/proc/self/mountinfo``)."""
    target = str(point)
    try:
        with open("/proc/self/mountinfo") as mounts:
            for line in mounts:
                fields = line.split()
                if len(fields) > 4 and _unescape(fields[4]) == target:
                    return True
    except OSError:
        return False
    return False


def _unescape(text: str) -> str:
    for code in ("040", "011", "012", "134"):
        text = text.replace(f"\\{code}", chr(int(code, 8)))
    return text
