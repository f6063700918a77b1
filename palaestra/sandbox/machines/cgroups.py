"""A box's cgroups: its memory, its processes and its CPU share, bounded together.

Every process of a box (every command, of every user) is in the box's cgroups from its
first instruction: a ``/bin/sh`` at the head of the launch chain writes itself into each
``cgroup.procs`` and then becomes the rest of the chain. They bound, for the box as a whole:

- memory: ``BoxSpec.memory_mb`` (the memory cgroup the process sandbox makes, ``cgroup``);
- processes: ``BoxSpec.processes`` (``pids.max``): root in a box is real root, which
  ``RLIMIT_NPROC`` does not bound, so a fork bomb stops here;
- CPU: ``BoxSpec.cpus`` (``cpu.cfs_quota_us`` or ``cpu.max``).

And they are how ``close`` and ``reap`` find every process of a box. A controller that this
process cannot use (not mounted, not delegated, not root) is left out, and a warning says
which bound is lost; cgroup v1 and v2 both work.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
from pathlib import Path, PurePosixPath

from palaestra._util.processes import pid_namespace
from palaestra.sandbox.cgroup import MemoryCgroups
from palaestra.sandbox.workdir import PREFIX, owner, stale

log = logging.getLogger("palaestra.sandbox.machines")

_JOIN = (
    '[ "$PPID" = "$0" ] || exit 125; '
    'while [ "$1" != -- ]; do echo $$ >"$1" || exit 125; shift; done; shift; exec "$@"'
)
"""Join each cgroup named before ``--``, then become the command; give up if the collector
(``$0``) is already gone, or a cgroup is (its box was torn down meanwhile)."""
_PERIOD = 100_000


class BoxCgroups:
    """Where a provider makes its boxes' cgroups (found once per provider)."""

    def __init__(self, memory: MemoryCgroups | None) -> None:
        self.memory = memory
        self.pids = _hierarchy("pids")
        self.cpu = _hierarchy("cpu")
        lost = [name for name, found in (("memory", memory), ("processes", self.pids),
                                         ("cpus", self.cpu)) if found is None]  # fmt: skip
        if lost:
            log.warning("boxes: no cgroup bounds their %s here", ", ".join(lost))

    def create(self, memory_mb: int, processes: int, cpus: float) -> list[Path]:
        """The cgroups of one box, bounded; removed again if one cannot be made."""
        made: list[Path] = []
        try:
            if self.memory is not None:
                made.append(self.memory.create(memory_mb << 20).path)
            if self.pids is not None:
                path = _make(self.pids[0])
                made.append(path)
                (path / "pids.max").write_text(str(processes))
            if self.cpu is not None:
                path = _make(self.cpu[0])
                made.append(path)
                quota = max(1000, int(cpus * _PERIOD))
                if self.cpu[1] == 1:
                    (path / "cpu.cfs_period_us").write_text(str(_PERIOD))
                    (path / "cpu.cfs_quota_us").write_text(str(quota))
                else:
                    (path / "cpu.max").write_text(f"{quota} {_PERIOD}")
        except BaseException:
            for path in made:
                with contextlib.suppress(OSError):
                    path.rmdir()
            raise
        return made

    def sweep(self) -> None:
        """Remove the empty cgroups of owners that are gone (killed between making a box's
        cgroups and writing its lease; what a lease names is torn down with it)."""
        namespace = pid_namespace()
        bases = [found[0] for found in (self.pids, self.cpu) if found is not None]
        if self.memory is not None:
            bases.append(self.memory.base)
        for base in bases:
            with contextlib.suppress(OSError):
                for entry in base.iterdir():
                    name = entry.name
                    if name.startswith(PREFIX) and stale(name[len(PREFIX) :], namespace):
                        with contextlib.suppress(OSError):
                            entry.rmdir()


def join_argv(paths: list[Path]) -> list[str]:
    """The head of a launch chain that puts everything after it in the cgroups ``paths``
    (started by this process: the head checks that its parent is still us)."""
    if not paths:
        return []
    procs = [str(path / "cgroup.procs") for path in paths]
    return ["/bin/sh", "-c", _JOIN, str(os.getpid()), *procs, "--"]


def _make(base: Path) -> Path:
    path = base / f"{PREFIX}{owner()}-{secrets.token_hex(6)}"
    path.mkdir()
    return path


def _hierarchy(controller: str) -> tuple[Path, int] | None:
    """Our cgroup's directory in ``controller``'s hierarchy (v1, else v2 with the
    controller enabled for our children) and the version, or ``None``."""
    if os.geteuid() != 0:
        return None
    try:
        membership = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    ours: dict[str, str] = {}
    for line in membership:
        fields = line.split(":", 2)
        if len(fields) == 3:
            for name in fields[1].split(",") if fields[1] else [""]:
                ours[name] = fields[2]
    for line in mounts:
        before, _, after = line.partition(" - ")
        head, tail = before.split(), after.split()
        if len(head) < 5 or len(tail) < 3:
            continue
        v1 = tail[0] == "cgroup" and controller in tail[2].split(",")
        v2 = tail[0] == "cgroup2" and controller not in ours
        key = controller if v1 else ""
        if not (v1 or v2) or key not in ours:
            continue
        try:
            inside = PurePosixPath(ours[key]).relative_to(head[3])
        except ValueError:
            continue
        base = Path(head[4], inside)
        if v2:
            with contextlib.suppress(OSError):
                if controller in (base / "cgroup.subtree_control").read_text().split():
                    return base, 2
            continue
        return base, 1
    return None
