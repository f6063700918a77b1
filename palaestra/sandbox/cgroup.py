"""A memory cgroup per sandboxed run: one bound on all the host RAM a run holds, together.

``RLIMIT_AS`` bounds the address space of each process, one by one. It does not see pages
the kernel keeps for a run outside any mapping: a ``memfd`` (or a file on a tmpfs) written
and never mapped, pipe and socket buffers, page tables, and it gives each of a run's
processes its own ``memory_mb``. A memory cgroup counts all of these, for every process of
the run, and the kernel stops a run that reaches its bound: the write or allocation fails
with ``ENOMEM`` or the out-of-memory killer ends a process of the run (``oom_kill`` in the
cgroup's counters, which the sandbox reads to name ``Limit.MEMORY``).

Each run's cgroup is a child of this process's own memory cgroup (so the run also stays
inside any bound the host process is under), named like the work dirs (``workdir.PREFIX``,
then who made it), so that the ones a killed process left behind are swept. cgroup v1
(``memory.limit_in_bytes``, ``memory.memsw.limit_in_bytes``) and v2 (``memory.max``,
``memory.swap.max``) both work; v2 needs the memory controller enabled for the children of
our cgroup (``cgroup.subtree_control``), which is left to whoever made it. The run enters
its cgroup by a ``/bin/sh`` at the head of the launch chain (``join_argv``): nothing runs
Python between ``fork`` and ``exec``.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import secrets
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from palaestra._util.processes import pid_namespace
from palaestra.sandbox.workdir import PREFIX, owner, stale

_JOIN = 'echo $$ >"$0" && exec "$@"'
"""The shell moves itself into the cgroup (the file in ``$0``), then becomes the command."""


@dataclass(frozen=True, slots=True)
class MemoryCgroups:
    """Where the runs' memory cgroups are made: ``base`` (our own memory cgroup)."""

    base: Path
    version: int

    def create(self, limit_bytes: int) -> RunCgroup:
        """A fresh cgroup bounded to ``limit_bytes`` of RAM (and no swap beyond it)."""
        path = self.base / f"{PREFIX}{owner()}-{secrets.token_hex(6)}"
        path.mkdir()
        cgroup = RunCgroup(path, self.version)
        try:
            if self.version == 1:
                _write(path / "memory.limit_in_bytes", limit_bytes)
                _write(path / "memory.memsw.limit_in_bytes", limit_bytes, needed=False)
            else:
                _write(path / "memory.max", limit_bytes)
                _write(path / "memory.swap.max", 0, needed=False)
        except BaseException:
            cgroup.remove()
            raise
        return cgroup

    def sweep(self) -> None:
        """Remove run cgroups left by processes that no longer exist (killed while a run was
        going; their processes died with them, the empty cgroup stayed)."""
        namespace = pid_namespace()
        with contextlib.suppress(OSError):
            for entry in self.base.iterdir():
                name = entry.name
                if name.startswith(PREFIX) and stale(name[len(PREFIX) :], namespace):
                    with contextlib.suppress(OSError):
                        entry.rmdir()


class RunCgroup:
    """The memory cgroup of one run: how to enter it, whether the run hit it, removal."""

    def __init__(self, path: Path, version: int) -> None:
        self.path = path
        self.version = version

    def join_argv(self) -> list[str]:
        """The head of a launch chain that puts everything after it in this cgroup."""
        return ["/bin/sh", "-c", _JOIN, str(self.path / "cgroup.procs")]

    def oom_kills(self) -> int:
        """Processes of the run the kernel's out-of-memory killer ended at the bound."""
        events = "memory.oom_control" if self.version == 1 else "memory.events"
        try:
            lines = (self.path / events).read_text().splitlines()
        except OSError:
            return 0
        for line in lines:
            name, _, count = line.partition(" ")
            if name == "oom_kill" and count.strip().isdigit():
                return int(count)
        return 0

    def remove(self, loop: asyncio.AbstractEventLoop | None = None, tries: int = 100) -> None:
        """Remove the cgroup once the run is over. Processes of a killed run may take a
        moment to exit (the cgroup is busy until then): with ``loop``, retry every 50 ms; one
        still busy after that is left for ``MemoryCgroups.sweep``."""
        try:
            self.path.rmdir()
        except FileNotFoundError:
            return
        except OSError as error:
            busy = error.errno == errno.EBUSY
            if busy and loop is not None and tries > 0 and not loop.is_closed():
                loop.call_later(0.05, self.remove, loop, tries - 1)


def find_memory_cgroups() -> MemoryCgroups | str:
    """Where per-run memory cgroups can be made here, or why they cannot (a short reason)."""
    if os.geteuid() != 0:
        return "not root"
    try:
        membership = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError as error:
        return f"cannot read /proc/self: {error}"
    found = _memory_hierarchy(membership, mounts)
    if isinstance(found, str):
        return found
    cgroups = found
    if cgroups.version == 2:
        problem = _delegate_v2(cgroups.base)
        if problem is not None:
            return problem
    try:  # the proof: make one, bound it, remove it
        cgroups.create(64 << 20).remove()
    except OSError as error:
        return f"cannot make a memory cgroup under {cgroups.base}: {error}"
    return cgroups


def _memory_hierarchy(membership: list[str], mounts: list[str]) -> MemoryCgroups | str:
    """Our memory cgroup's directory: the v1 ``memory`` hierarchy if one is mounted, else v2."""
    ours: dict[str, str] = {}  # "memory" (v1) or "" (v2) -> our cgroup's path in it
    for line in membership:
        fields = line.split(":", 2)
        if len(fields) == 3:
            for controller in fields[1].split(",") if fields[1] else [""]:
                ours[controller] = fields[2]
    v1 = v2 = None
    for line in mounts:
        before, _, after = line.partition(" - ")
        head, tail = before.split(), after.split()
        if len(head) < 5 or len(tail) < 3:
            continue
        root, point = _unescape(head[3]), _unescape(head[4])
        if tail[0] == "cgroup" and "memory" in tail[2].split(","):
            v1 = (root, point)
        elif tail[0] == "cgroup2" and v2 is None:
            v2 = (root, point)
    for version, mount, key in ((1, v1, "memory"), (2, v2, "")):
        if mount is None:
            continue
        if key not in ours:
            return f"this process is in no cgroup v{version} memory hierarchy"
        root, point = mount
        try:
            inside = PurePosixPath(ours[key]).relative_to(root)
        except ValueError:
            return f"this process's cgroup {ours[key]} is outside the mounted {root}"
        return MemoryCgroups(Path(point, inside), version)
    return "no cgroup file system with a memory controller is mounted"


def _delegate_v2(base: Path) -> str | None:
    """Why the children of ``base`` cannot have a memory bound (v2), or ``None`` if they can.

    Enabling the controller is left to whoever made the cgroup: the kernel refuses it in a
    cgroup that has processes (ours has us), and the host's cgroups are not ours to change.
    """
    try:
        if "memory" in (base / "cgroup.subtree_control").read_text().split():
            return None
    except OSError as error:
        return f"cannot read {base}/cgroup.subtree_control: {error}"
    return (
        f"the memory controller is not enabled for the children of {base} (run palaestra "
        "in a cgroup that delegates it, e.g. a systemd unit with Delegate=memory)"
    )


def _write(path: Path, value: int, *, needed: bool = True) -> None:
    """Write a cgroup setting; an absent optional one (no swap accounting) is skipped."""
    try:
        path.write_text(str(value))
    except FileNotFoundError:
        if needed:
            raise


def _unescape(field: str) -> str:
    """A path as ``/proc/self/mountinfo`` writes it (space, tab, newline, backslash as octal)."""
    for code in ("040", "011", "012", "134"):
        field = field.replace(f"\\{code}", chr(int(code, 8)))
    return field
