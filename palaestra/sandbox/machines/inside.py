"""How a command runs inside a root file system: bubblewrap over the box's merged overlay.

The chain of ``exec``s (nothing runs Python between ``fork`` and ``exec``)::

    sh -c 'echo $$ >CGROUP/cgroup.procs ..; exec "$@"' .. prlimit .. -- \\
        [setpriv --reuid=UID ..] -- bwrap --bind MERGED / .. -- CMD

- The box's cgroups (``cgroups``: one set per box, every command of the box in it) bound
  the memory, the number and the CPU of all its processes together, and are how ``seal``,
  ``close`` and ``reap`` find them all.
- As the image's ``root``: ``bwrap`` runs as real root (the image's files belong to uid 0,
  ``apt-get`` and ``dpkg`` need it) in new pid, network, ipc, uts and cgroup namespaces,
  with Docker's default capability set and nothing more (no ``CAP_SYS_ADMIN``: no mounts,
  no remounts, no namespaces).
- As another user: ``setpriv`` drops to the user's uid and gids first and ``bwrap`` makes a
  user namespace too (``--unshare-all``), so nothing in the box holds any privilege. The
  user also keeps ``BOX_GROUP``, a group no account of the host has: the runtime directory
  and each box's directory are open to root and that group only (``0710``), so the user's
  ``bwrap`` reaches the box's root and no other user of the host does.
- The kernel's host-wide knobs are out of reach for every user, root included, as Docker
  has them (``proc_covers``): ``/proc/sys``, ``/proc/sysrq-trigger``, ``/proc/irq``,
  ``/proc/bus`` and ``/proc/fs`` are read-only, ``/proc/kcore``, ``/proc/keys``, the timer
  and scheduler tables are empty, ``/proc/acpi`` and ``/proc/scsi`` are empty read-only
  directories; no ``sysfs`` is mounted (``/sys`` is the image's empty directory). Without
  ``CAP_SYS_ADMIN`` none of these covers can be unmounted or remounted.
- The box's root and ``/`` of every build step are mounted ``nosuid,nodev`` by bubblewrap
  (``--bind``); ``/dev`` is bubblewrap's own, with the few safe devices only.
- No network in either: the only interface is ``lo`` (each command's own, or the box's, one
  namespace its commands share when the host serves it a proxy: ``netns``).
- The environment is the image's, given to bubblewrap with ``--setenv``: the host's
  programs of the chain start with an empty environment (only ``PALAESTRA_PROTOCOL`` for a
  shell's supervisor), so nothing of the host's leaks in and no variable of the image
  (``LD_PRELOAD``) reaches a host program.
- ``--die-with-parent``: if the collector dies (even ``kill -9``), its boxes' processes die
  with it; what is left (mounts, directories) is reaped through the leases.
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from palaestra.errors import SandboxFailure
from palaestra.sandbox.machines.provider import DEFAULT_PATH

DOCKER_CAPABILITIES = (
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FSETID",
    "CAP_FOWNER",
    "CAP_MKNOD",
    "CAP_NET_RAW",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETFCAP",
    "CAP_SETPCAP",
    "CAP_NET_BIND_SERVICE",
    "CAP_SYS_CHROOT",
    "CAP_KILL",
    "CAP_AUDIT_WRITE",
)
"""What root in a box may do: Docker's default set (a task written for Docker works)."""

BOX_GROUP = 2_147_480_001
"""The group that may pass through the runtime directory and the boxes' directories: every
box command of a non-root user holds it (inside the box it shows as the overflow group);
no account of the host may (``group_problem``)."""

READ_ONLY_PROC = ("sys", "sysrq-trigger", "irq", "bus", "fs")
"""Entries of ``/proc`` a box sees read-only (the kernel's settings, host-wide)."""
MASKED_PROC_FILES = ("kcore", "keys", "timer_list", "timer_stats", "sched_debug", "latency_stats")
"""Entries of ``/proc`` a box sees as ``/dev/null`` (host memory, keys, timers)."""
MASKED_PROC_DIRS = ("acpi", "scsi", "asound")
"""Directories of ``/proc`` a box sees empty and read-only (the host's hardware)."""

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True, slots=True)
class User:
    """Who a command runs as: a uid, its gids (primary first) and its home."""

    name: str
    uid: int
    gid: int
    groups: tuple[int, ...] = ()
    home: str = "/"


@functools.cache
def proc_covers() -> tuple[str, ...]:
    """The bubblewrap arguments (after ``--proc /proc``) that put Docker's covers on a box's
    ``/proc``: what this kernel has of ``READ_ONLY_PROC``, ``MASKED_PROC_FILES`` and
    ``MASKED_PROC_DIRS`` (a box's ``/proc`` has the host's entries)."""
    covers: list[str] = []
    for name in READ_ONLY_PROC:
        path = f"/proc/{name}"
        if os.path.lexists(path):  # bind the host's entry read-only: the same kernel knobs
            covers += ["--ro-bind", path, path]
    for name in MASKED_PROC_FILES:
        path = f"/proc/{name}"
        if os.path.lexists(path):
            covers += ["--ro-bind", "/dev/null", path]
    for name in MASKED_PROC_DIRS:
        path = f"/proc/{name}"
        if os.path.isdir(path):
            covers += ["--tmpfs", path, "--remount-ro", path]
    return tuple(covers)


def group_problem() -> str | None:
    """Why ``BOX_GROUP`` cannot keep the boxes' directories root's (an account of the host
    has it), or ``None``."""
    for table, column in (("/etc/group", 2), ("/etc/passwd", 3)):
        try:
            text = Path(table).read_text(errors="replace")
        except OSError:
            continue
        for row in _table(text):
            if len(row) > column and row[column] == str(BOX_GROUP):
                return (
                    f"gid {BOX_GROUP} is used by {table} ({row[0]}): the rootfs provider "
                    "keeps it for its boxes' directories"
                )
    return None


def private_directory(path: Path) -> None:
    """Make ``path`` root's, passable by ``BOX_GROUP`` only (``0710``): where boxes live."""
    os.chown(path, 0, BOX_GROUP)
    os.chmod(path, 0o710)


def read_in_root(root: Path, relative: str, max_bytes: int = 1 << 22) -> str | None:
    """A file of the box (``relative`` to its root) read without following any link: the
    box's files are written by untrusted code, and the host reads them as root."""
    parts = [part for part in relative.split("/") if part]
    try:
        fd = os.open(root, _DIRECTORY)
    except OSError:
        return None
    try:
        for part in parts[:-1]:
            child = os.open(part, _DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        file = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
        with os.fdopen(file, "rb") as handle:
            return handle.read(max_bytes).decode(errors="replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def resolve_user(root: Path, spec: str) -> User:
    """``USER``'s value (``name``, ``uid``, ``name:group``, ``uid:gid``) as the box's
    ``/etc/passwd`` and ``/etc/group`` have it."""
    name, _, group = spec.partition(":")
    passwd = _table(read_in_root(root, "etc/passwd"))
    groups = _table(read_in_root(root, "etc/group"))
    entry = next((row for row in passwd if row[0] == name), None)
    if entry is None and name.isdigit():
        entry = next((row for row in passwd if row[2] == name), None)
    if entry is None and not name.isdigit():
        raise SandboxFailure(f"user {name!r} is not in the image's /etc/passwd")
    uid = int(name) if entry is None else _number(entry[2])
    gid = _number(entry[3]) if entry is not None else 0
    login = entry[0] if entry is not None else name
    if group:
        found = next((row for row in groups if group in (row[0], row[2])), None)
        if found is None and not group.isdigit():
            raise SandboxFailure(f"group {group!r} is not in the image's /etc/group")
        gid = int(group) if found is None else _number(found[2])
    extra = tuple(
        _number(row[2])
        for row in groups
        if len(row) > 3 and login in row[3].split(",") and _number(row[2]) != gid
    )
    home = entry[5] if entry is not None and len(entry) > 5 and entry[5] else "/"
    return User(login, uid, gid, extra, home)


def _table(text: str | None) -> list[list[str]]:
    if text is None:
        return []
    return [line.split(":") for line in text.splitlines() if line and not line.startswith("#")]


def _number(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        return 0


def environment(
    user: User, image_env: Mapping[str, str], extra: Mapping[str, str] | None
) -> dict[str, str]:
    """A command's environment: Docker's defaults, then the image's ``ENV``, then ``extra``."""
    env = {"PATH": DEFAULT_PATH, "HOME": user.home, "HOSTNAME": "box", "LANG": "C.UTF-8"}
    env.update(image_env)
    env.update(extra or {})
    return env


def argv(
    command: Sequence[str],
    *,
    root: Path,
    user: User,
    cwd: str,
    env: Mapping[str, str],
    prlimit: Sequence[str] = (),
    join: Sequence[str] = (),
    status_fd: int | None = None,
    seccomp_fd: int | None = None,
    binds: Sequence[str] = (),
    netns: str | None = None,
) -> list[str]:
    """The full argv running ``command`` in the root file system ``root`` (see above);
    ``binds``: more bubblewrap mount arguments (after ``/``, ``/proc`` and ``/dev``);
    ``netns``: a network namespace (a path) to run in, shared with the box's other commands,
    instead of a new one of the command's own."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxFailure("bubblewrap (bwrap) is not installed")
    head: list[str] = [*join]
    if netns is not None:
        nsenter = shutil.which("nsenter")
        if nsenter is None:
            raise SandboxFailure("nsenter (util-linux) is needed to share a box's loopback")
        head += [nsenter, f"--net={netns}", "--"]
    tool = shutil.which("prlimit")
    if prlimit and tool is not None:
        head += [tool, *prlimit, "--"]
    box = [bwrap, "--die-with-parent", "--new-session", "--hostname", "box"]
    if user.uid == 0:
        box += ["--unshare-pid", "--unshare-ipc", "--unshare-uts"]
        box += [] if netns is not None else ["--unshare-net"]
        box += ["--unshare-cgroup-try", "--cap-drop", "ALL"]
        for capability in DOCKER_CAPABILITIES:
            box += ["--cap-add", capability]
    else:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            raise SandboxFailure("setpriv (util-linux) is needed to run a box's user")
        gids = ",".join(str(gid) for gid in (*user.groups, BOX_GROUP))
        head += [setpriv, f"--reuid={user.uid}", f"--regid={user.gid}"]
        head += [f"--groups={gids}", "--no-new-privs", "--"]
        box += ["--unshare-all", "--unshare-user", "--disable-userns"]
        box += ["--share-net"] if netns is not None else []
    box += ["--bind", str(root), "/", "--proc", "/proc", *proc_covers(), "--dev", "/dev"]
    box += binds
    if status_fd is not None:
        box += ["--json-status-fd", str(status_fd)]
    if seccomp_fd is not None:
        box += ["--seccomp", str(seccomp_fd)]
    for name, value in env.items():
        box += ["--setenv", name, value]
    box += ["--chdir", cwd or "/", "--", *command]
    return [*head, *box]
