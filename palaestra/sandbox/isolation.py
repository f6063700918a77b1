"""How a sandboxed process is isolated: bubblewrap, a throw-away uid and rlimits.

The launch is a chain of ``exec``s, so nothing runs Python between ``fork`` and ``exec`` (safe
with threads and with any event loop)::

    sh -c 'echo $$ >CGROUP/cgroup.procs && exec "$@"' .. prlimit --cpu=.. --as=.. -- \\
        setpriv --reuid=UID .. -- bwrap --unshare-all .. -- CMD

- ``sh`` puts the run in a memory cgroup of its own (``cgroup``), which bounds the host RAM
  the whole run holds: memory of every process, memfds, tmpfs files, pipe and socket
  buffers. Where no memory cgroup can be made there is no such step (see ``seccomp``).
- ``prlimit`` (util-linux) sets the rlimits, which every later ``exec`` inherits.
- ``setpriv`` drops root to a uid of its own for this run. ``RLIMIT_NPROC`` is not enforced
  for root, and counts every process of a uid, so a private uid per concurrent run is what
  makes a fork bomb stop without starving its neighbours.
- ``bwrap`` gives the run new user, pid, network, ipc, uts and cgroup namespaces (no network,
  no view of other processes), a read-only ``/usr``, an empty ``/etc`` but for the dynamic
  linker's files, a read-only ``/dev`` (its devices stay usable), a private ``/tmp`` and
  ``/dev/shm``, and the work dir as the only writable host directory; the rest of the file
  system is read-only. ``/tmp`` and ``/dev/shm`` are folders of the run's bounded tmpfs
  (see ``workdir``) or, without one, tmpfs mounts of ``Limits.disk_mb`` each: bubblewrap's
  own ``/dev`` and ``/dev/shm`` have no size, and their files would be host RAM that no
  rlimit counts.
  With a pid namespace, killing ``bwrap`` kills everything the run started. bwrap also
  loads a seccomp filter (``seccomp``) before the command: ``ptrace``, SysV shared memory
  and calls no sandboxed program needs fail with ``EPERM``.

Without bubblewrap (or where user namespaces are forbidden) the fallback keeps the rlimits
and the uid drop and warns loudly: it is not a security boundary.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import random
import shutil
import signal
import subprocess
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path

from palaestra.sandbox.limits import Limits

log = logging.getLogger("palaestra.sandbox")

WORK_DIR = "/work"
"""Where the run's work dir appears inside bubblewrap."""

_ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime")
_ROOT_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
_UID_BASE = 1_000_000_000
_UIDS_PER_PROCESS = 1024

FALLBACK_WARNING = (
    "palaestra.sandbox: bubblewrap is not usable here ({why}); running code with rlimits only. "
    "This is NOT a security boundary: the code can read files and use the network. "
    "Install bubblewrap (apt-get install -y bubblewrap, or scripts/install.sh)."
)


class UidPool:
    """Throw-away uids for concurrent runs: one per run, returned when the run is over.

    Each process draws a random block of uids (no user owns them), so two collectors on one
    machine do not share a uid and so do not share a process budget. The least recently
    released uid is handed out first: a finished run leaves an exited process for init to
    reap, which still counts against its uid's process limit for a moment, so reusing the
    same uid in a burst would make ``bwrap`` fail to fork.
    """

    def __init__(self, size: int = _UIDS_PER_PROCESS) -> None:
        block = random.SystemRandom().randrange(0, 1_000_000)
        self._base = _UID_BASE + block * size
        self._free = collections.deque(range(self._base, self._base + size))
        self._lock = threading.Lock()

    def acquire(self) -> int:
        with self._lock:
            if not self._free:
                raise RuntimeError("more concurrent sandbox runs than sandbox uids")
            return self._free.popleft()

    def release(self, uid: int) -> None:
        with self._lock:
            self._free.append(uid)


def is_root() -> bool:
    return os.geteuid() == 0


def tools() -> dict[str, str | None]:
    """The helper programs found on PATH (``None`` when missing)."""
    return {name: shutil.which(name) for name in ("bwrap", "prlimit", "setpriv")}


def bubblewrap_problem(bwrap: str | None, uid: int | None) -> str | None:
    """Why bubblewrap cannot run here, or ``None`` when a trial run works."""
    if bwrap is None:
        return "bwrap is not installed"
    argv = [bwrap, "--unshare-all", "--die-with-parent", *_system_binds(), "--", "/usr/bin/true"]
    if uid is not None:
        argv = [*_drop_to(uid), *argv]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=10, env={}, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"{bwrap} cannot start: {error}"
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip()
        return f"{bwrap} failed: {message or done.returncode}"
    return None


def warn_fallback(why: str) -> None:
    message = FALLBACK_WARNING.format(why=why)
    log.warning(message)
    warnings.warn(message, RuntimeWarning, stacklevel=3)


def launch_argv(
    command: Sequence[str],
    *,
    limits: Limits,
    work_dir: Path,
    uid: int | None,
    bwrap: str | None,
    bwrap_args: Sequence[str] = (),
    read_only: Sequence[str] = (),
    tmp_dir: Path | None = None,
    shm_dir: Path | None = None,
    join: Sequence[str] = (),
) -> list[str]:
    """The full argv that runs ``command`` isolated (see the module docstring).

    ``join``: the head that enters the run's memory cgroup (``RunCgroup.join_argv``).
    """
    argv: list[str] = [*join]
    prlimit = shutil.which("prlimit")
    if prlimit is not None:
        argv += [prlimit, *limits.prlimit_args(), "--"]
    if uid is not None:
        argv += _drop_to(uid)
    if bwrap is None:
        return [*argv, *command]
    argv += [
        bwrap,
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--unshare-user",
        "--disable-userns",
        "--hostname",
        "sandbox",
        *bwrap_args,
        *_system_binds(),
    ]
    size = str(limits.disk_mb * 1024 * 1024)
    for inside, outside in (("/tmp", tmp_dir), ("/dev/shm", shm_dir)):
        if outside is None:
            argv += ["--size", size, "--tmpfs", inside]
        else:
            argv += ["--bind", str(outside), inside]
    for path in read_only:
        argv += ["--ro-bind", path, path]
    argv += ["--bind", str(work_dir), WORK_DIR, "--remount-ro", "/", "--remount-ro", "/dev"]
    return [*argv, "--chdir", WORK_DIR, "--", *command]


def kill_uid(uid: int) -> None:
    """SIGKILL every live process of ``uid`` (clean-up without a pid namespace; needs root)."""
    for _ in range(100):  # a fork bomb may fork between the scan and the kill: rescan
        found = [pid for pid in _pids() if _live_owner(pid) == uid]
        if not found:
            return
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def _drop_to(uid: int) -> list[str]:
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        raise RuntimeError("setpriv (util-linux) is needed to run sandboxed code as root")
    return [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs", "--"]


def _system_binds() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for name in _ROOT_LINKS:
        path = Path("/", name)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    for name in _ETC_FILES:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    return [*args, "--proc", "/proc", "--dev", "/dev"]


def _pids() -> list[int]:
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def _live_owner(pid: int) -> int | None:
    """The real uid of ``pid`` unless it is already a zombie (``/proc/PID``'s owner is not
    reliable: it turns to root when a process changes its uid)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("State:") and line.split()[1] in ("Z", "X"):
                    return None
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None
