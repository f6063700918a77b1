"""The private work dir of one run: files in, files out, removal, and sweeping stale ones.

As root, a run's directory is a tmpfs of ``Limits.disk_mb`` mounted on the host: the work
dir, ``/tmp`` and ``/dev/shm`` of the run are folders of it, so together they cannot outgrow
the bound (the kernel answers ``ENOSPC``), and removal is one unmount however many files
the run left.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from palaestra._util.processes import alive, pid_namespace, same_process, started
from palaestra.errors import ConfigError, SandboxLimitExceeded
from palaestra.sandbox.limits import Limit

PREFIX = "palaestra-sandbox-"
MAX_FILES_OUT = 1000
"""Files ``collect`` returns from one run unless told more (``max_files``)."""
INODES_PER_MB = 128
"""Files a bounded run may create per MB of ``disk_mb``: each costs about 1 KB of kernel
memory that the size bound does not count (32,768 files, ~32 MB, at the default 256 MB)."""

_MS_NOSUID, _MS_NODEV, _MNT_DETACH = 2, 4, 2


class WorkDir:
    """A fresh directory, owned by the run's uid, that is the run's only writable host path.

    ``disk_mb`` (root only): mount a tmpfs of that size on the run's directory and keep the
    work dir (``path``), ``tmp`` and ``shm`` in it. Without it ``tmp`` and ``shm`` are
    ``None`` and the work dir is a plain directory.
    """

    def __init__(self, root: Path | None, uid: int | None, disk_mb: int | None = None) -> None:
        self.uid = uid
        self.base = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{owner()}-", dir=root))
        self.bounded = False
        self.tmp: Path | None = None
        self.shm: Path | None = None
        try:
            if disk_mb is not None:
                mount_tmpfs(self.base, disk_mb, uid)
                self.bounded = True
            self._own(self.base)
            self.path = self._folder("work")
            if self.bounded:
                self.tmp, self.shm = self._folder("tmp"), self._folder("shm")
        except BaseException:
            self.remove()
            raise

    def write(self, files: Mapping[str, str | bytes]) -> None:
        """Put ``files`` (relative path -> content) into the work dir."""
        for name, content in files.items():
            path = self.path / _relative(name)
            for parent in reversed(path.relative_to(self.path).parents[:-1]):
                directory = self.path / parent
                if not directory.is_dir():
                    directory.mkdir()
                    self._own(directory)
            data = content.encode() if isinstance(content, str) else bytes(content)
            path.write_bytes(data)
            self._own(path)

    def collect(
        self, patterns: Iterable[str], max_bytes: int, max_files: int = MAX_FILES_OUT
    ) -> dict[str, bytes]:
        """Regular files matching the glob ``patterns``, as relative path -> content.

        Run only once every process of the run is gone. Symlinks are never followed: a file
        the code linked to ``/etc/shadow`` is skipped, not read with our privileges. More
        than ``max_files`` matching files is ``SandboxLimitExceeded`` (``Limit.FILES_OUT``)
        naming the patterns, how many matched and the limit: a caller never gets a silently
        cut set of outputs.
        """
        root = os.path.realpath(self.path)
        matched: dict[str, Path] = {}
        for pattern in patterns:
            for match in sorted(self.path.glob(str(_relative(pattern)))):
                name = match.relative_to(self.path).as_posix()
                if name in matched or not _regular(match):
                    continue
                if os.path.commonpath([root, os.path.realpath(match)]) == root:
                    matched[name] = match
        if len(matched) > max_files:
            raise SandboxLimitExceeded(
                f"collect {list(patterns)!r}: {len(matched):,} files match in the run's work "
                f"dir, over the limit of {max_files:,}; give a larger max_files to collect "
                "them all, or narrower patterns",
                Limit.FILES_OUT,
            )
        found: dict[str, bytes] = {}
        for name, match in matched.items():
            data = _read_regular(match, max_bytes)
            if data is not None:
                found[name] = data
        return found

    def full(self) -> bool:
        """The run used up its disk bound (no block or no inode left)."""
        if not self.bounded:
            return False
        try:
            usage = os.statvfs(self.base)
        except OSError:
            return False
        return usage.f_bavail == 0 or usage.f_favail == 0

    def remove(self) -> None:
        if self.bounded:
            unmount(self.base)
            self.bounded = False
        for attempt in range(3):
            try:
                remove_tree(self.base)
                return
            except OSError:  # a process being killed created a file during the walk
                if attempt == 2:
                    raise
                time.sleep(0.05)

    def _folder(self, name: str) -> Path:
        path = self.base / name
        path.mkdir()
        self._own(path)
        return path

    def _own(self, path: Path) -> None:
        if self.uid is not None:
            os.chown(path, self.uid, self.uid)
        os.chmod(path, 0o700 if path.is_dir() else 0o600)


def mount_tmpfs(path: Path, size_mb: int, uid: int | None) -> None:
    """Mount a tmpfs of ``size_mb`` (and a bounded number of files) on ``path`` (root only)."""
    options = f"size={size_mb}m,nr_inodes={max(1024, size_mb * INODES_PER_MB)},mode=0700"
    if uid is not None:
        options += f",uid={uid},gid={uid}"
    done = _libc().mount(
        b"tmpfs", os.fsencode(path), b"tmpfs", _MS_NOSUID | _MS_NODEV, options.encode()
    )
    if done != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"cannot mount a tmpfs on {path}: {os.strerror(error)}")


def unmount(path: Path) -> None:
    """Detach the mount on ``path``; its files are freed once nothing uses them."""
    if _libc().umount2(os.fsencode(path), _MNT_DETACH) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"cannot unmount {path}: {os.strerror(error)}")


def tmpfs_problem(root: Path | None) -> str | None:
    """Why a bounded work dir cannot be made under ``root`` (``None`` when it can)."""
    if os.geteuid() != 0:
        return "not root"
    try:
        WorkDir(root, None, 1).remove()
    except OSError as error:
        return str(error)
    return None


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def remove_tree(path: Path) -> None:
    """``rm -rf``, also through directories the sandboxed code made unreadable."""

    def retry(function: Callable[..., Any], failed: str, _error: Any) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(failed), 0o700)
            if os.path.isdir(failed) and not os.path.islink(failed):
                os.chmod(failed, 0o700)
        with contextlib.suppress(FileNotFoundError):
            function(failed)

    if path.exists():
        shutil.rmtree(path, onerror=retry)


def check_reachable(root: Path | None) -> None:
    """The sandbox's uid must be able to enter every directory above its work dirs."""
    path = Path(root if root is not None else tempfile.gettempdir()).resolve()
    for directory in (path, *path.parents):
        if not directory.stat().st_mode & stat.S_IXOTH:
            raise ConfigError(
                f"sandbox work dirs under {path} are out of the sandbox uid's reach: "
                f"{directory} is not o+x (chmod o+x it, or choose another root_dir)"
            )


def sweep_stale(root: Path | None) -> None:
    """Remove work dirs left by processes that no longer exist (killed before cleaning up).

    A work dir's name says who made it (``owner``): gone is a process whose pid now names
    another process (a later start) or none. A dir made in another pid namespace (a sandbox
    in a container sharing ``/tmp``) is left alone: its pids are not this namespace's.
    """
    base = Path(root) if root is not None else Path(tempfile.gettempdir())
    namespace = pid_namespace()
    with contextlib.suppress(OSError):
        for entry in base.iterdir():
            if entry.name.startswith(PREFIX) and stale(entry.name[len(PREFIX) :], namespace):
                with contextlib.suppress(OSError):
                    if os.path.ismount(entry):
                        unmount(entry)
                    remove_tree(entry)


def owner() -> str:
    """Who makes a work dir (or a run's cgroup), as its name records it:
    ``PID-START-NAMESPACE`` (``started``, ``pid_namespace``), or ``PID`` alone where ``/proc``
    cannot tell (as names were first)."""
    pid, namespace = os.getpid(), pid_namespace()
    start = started(pid)
    return f"{pid}-{start}-{namespace}" if start is not None and namespace else str(pid)


def stale(name: str, namespace: int | None) -> bool:
    """Whether the process a work dir's name (after the prefix) records is gone."""
    fields = name.split("-")  # mkdtemp's random suffix holds no "-"
    if len(fields) == 2 and fields[0].isdigit():  # PID alone: judged by it, as it was then
        return not alive(int(fields[0]))
    if len(fields) == 4 and all(field.isdigit() for field in fields[:3]):
        pid, start, made_in = (int(field) for field in fields[:3])
        return made_in == namespace and not same_process(pid, start)
    return False  # not a name this module makes


def _relative(name: str) -> PurePosixPath:
    path = PurePosixPath(name)
    if path.is_absolute() or not path.parts or ".." in path.parts:
        raise ValueError(f"sandbox file name must be a relative path inside the work dir: {name!r}")
    return path


def _regular(path: Path) -> bool:
    """Whether ``path`` itself (not what a link names) is a regular file."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _read_regular(path: Path, max_bytes: int) -> bytes | None:
    """The first ``max_bytes`` of ``path`` if it is a regular file (not a link, directory,
    fifo or device); ``None`` otherwise. The fd is closed on every path."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        left = max_bytes
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)
