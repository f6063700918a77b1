"""A Docker box's processes seen from the host's ``/proc``: who owns a box (its lease: the
collector's pid, start time and pid namespace) and what runs in it (found by its pids cgroup,
killed by a launch's token or all but its init, and the deleted files they hold open).

The kernel answers these at once, where the daemon would need a round trip per process: what
a collector cleaning up after a kill -9, or a box killing what one ``docker exec`` started,
needs.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Sequence
from pathlib import Path

TOKEN_VARIABLE = "PALAESTRA_EXEC"
"""The environment variable that marks what one launch started (``kill_marked``)."""


def start_time(pid: int) -> int | None:
    """The kernel's start time of ``pid`` (clock ticks since boot), or ``None`` if gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return int(stat.read().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def pid_namespace(pid: int | str = "self") -> str:
    """The inode of ``pid``'s pid namespace (``""`` if unreadable)."""
    try:
        return str(os.stat(f"/proc/{pid}/ns/pid").st_ino)
    except OSError:
        return ""


def lease_of(pid: int) -> str:
    """The lease label naming ``pid`` as a box's owner: ``pid:start time:pid namespace``."""
    return f"{pid}:{start_time(pid)}:{pid_namespace(pid)}"


def lease_alive(lease: str) -> bool:
    """Whether the owner a lease names may still run: the same pid with the same start time,
    or a pid of another pid namespace (a collector in another container sharing the daemon:
    its owner cannot be judged from here, so its boxes are left alone)."""
    pid, started, namespace = [*lease.split(":"), "", ""][:3]
    if not pid.isdigit():
        return False
    if namespace != pid_namespace():
        return True
    return str(start_time(int(pid))) == started


# -- processes inside a box -----------------------------------------------------------------


def kill_marked(init: int, token: str) -> None:
    """SIGKILL every process of the container whose init is ``init`` that carries the launch
    ``token`` in its environment (what one ``docker exec`` started). Rescans until none is
    left: a fork bomb may fork between a scan and its kill."""
    marker = f"{TOKEN_VARIABLE}={token}".encode()
    for _ in range(100):
        found = [pid for pid in _container_pids(init) if marker in _environ(pid)]
        if not found:
            return
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def kill_all_but_init(init: int) -> None:
    """SIGKILL every process of the container whose init is ``init``, but the init (which
    starts its ``sleep`` again): the box stays, what ran in it is gone."""
    for _ in range(100):
        found = [pid for pid in _container_pids(init) if pid != init]
        if not found:
            return
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def deleted_open_bytes(init: int, layers: Sequence[Path | None]) -> int:
    """Bytes of the files the container's processes deleted but hold open on its filesystem
    (``layers``: its merged directory and its writable layer, as the kernel names their
    devices): no directory shows them, the disk holds them."""
    devices = set()
    for layer in layers:
        with contextlib.suppress(OSError):
            if layer is not None:
                devices.add(os.stat(layer).st_dev)
    seen: set[tuple[int, int]] = set()
    total = 0
    for pid in _container_pids(init):
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                path = f"/proc/{pid}/fd/{fd}"
                with contextlib.suppress(OSError):
                    if not os.readlink(path).endswith(" (deleted)"):
                        continue
                    info = os.stat(path)
                    key = (info.st_dev, info.st_ino)
                    if info.st_dev in devices and info.st_nlink == 0 and key not in seen:
                        seen.add(key)
                        total += info.st_blocks * 512
    return total


def _container_pids(init: int) -> list[int]:
    """The host pids of the container whose init is ``init``: the processes in its pids
    cgroup, or (no such cgroup found) every process of its pid namespace."""
    try:
        lines = Path(f"/proc/{init}/cgroup").read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers in ("pids", ""):
            base = "/sys/fs/cgroup/pids" if controllers else "/sys/fs/cgroup"
            with contextlib.suppress(OSError, ValueError):
                text = Path(f"{base}{path}/cgroup.procs").read_text()
                return [int(pid) for pid in text.split()]
    try:
        namespace = os.readlink(f"/proc/{init}/ns/pid")
    except OSError:
        return []
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{entry}/ns/pid") == namespace:
                    pids.append(int(entry))
    return pids


def _environ(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return b""
