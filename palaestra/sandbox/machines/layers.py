"""The layer store of the ``rootfs`` provider: directories stacked by a kernel overlay.

::

    ~/.cache/palaestra/rootfs/
        layers/<name>/          one build step's result (an overlay upper dir: new and
                                changed files, whiteouts for removed ones)
        layers/<name>.lock      held while the step is built (two builds of one step wait)
        images/<ref>.json       a built image: its layer chain, workdir, env and user
        disks/<MB>.img          an empty file system of that size, copied for each box's
                                disk (``storage``)

A layer's name is the first 24 hex digits of its key, ``sha256(parent key, the instruction,
the state it ran in, the digest of the files it copied)``: the same step over the same
parent is built once per machine. A layer is built under a temporary name and renamed into
place when complete, so a layer directory that exists is whole.

The store is root's only (``0700``): a layer holds the image's files as they are, setuid
programs included, and no other user of the host may reach them.

Overlays are mounted ``nosuid,nodev`` (what a box or an image plants is no setuid program
and no device on the host), with lower directories named relative to ``layers/`` (``mount``
runs there): the kernel takes one page of mount options, which fits about 200 such names
(a Dockerfile rarely has 30 steps; Docker's own cap is 127 layers).

``drop_from_upper`` takes paths out of an unmounted overlay's upper directory, so that the
layers' own files show there again (how ``Box.seal`` puts an image's ``TOOLCHAIN`` back).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import os
import secrets
import shutil
import stat
import subprocess
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from pathlib import Path

from palaestra._util.processes import pid_namespace
from palaestra.errors import SandboxFailure
from palaestra.sandbox.machines.leases import unmount
from palaestra.sandbox.workdir import owner, remove_tree, stale

NAME_LENGTH = 24
MAX_LAYERS = 120
"""Layers of one chain; a deeper Dockerfile is refused (Docker's own cap is 127)."""


def default_cache() -> Path:
    return Path.home() / ".cache" / "palaestra" / "rootfs"


def key_of(*parts: str | bytes) -> str:
    """A step's key: sha256 over its parts, each length-prefixed (no two lists collide)."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()


class LayerStore:
    """Layers and images under ``root`` (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.layers = root / "layers"
        self.images = root / "images"
        self.disks = root / "disks"

    def prepare(self) -> None:
        self.root.mkdir(parents=True, mode=0o700, exist_ok=True)
        os.chmod(self.root, 0o700)  # the images' setuid programs are nobody else's
        for path in (self.layers, self.images, self.disks):
            path.mkdir(exist_ok=True)

    def name(self, key: str) -> str:
        return key[:NAME_LENGTH]

    def path(self, name: str) -> Path:
        return self.layers / name

    def has(self, name: str) -> bool:
        return self.path(name).is_dir()

    def scratch(self, name: str) -> Path:
        """A fresh directory to build layer ``name`` in (renamed into place by ``commit``),
        named after its maker so that one a killed process left is swept (``sweep``)."""
        path = self.layers / f".{name}.{owner()}-{secrets.token_hex(4)}"
        path.mkdir()
        return path

    def sweep(self) -> int:
        """Remove the scratch directories of makers that are gone; how many."""
        count = 0
        namespace = pid_namespace()
        with contextlib.suppress(FileNotFoundError):
            for entry in self.layers.iterdir():
                maker = entry.name.rsplit(".", 1)[-1]
                if entry.name.startswith(".") and entry.is_dir() and stale(maker, namespace):
                    remove_tree(entry)
                    count += 1
        return count

    def commit(self, scratch: Path, name: str) -> None:
        os.replace(scratch, self.path(name))

    @contextlib.asynccontextmanager
    async def locked(self, name: str, deadline: float) -> AsyncIterator[None]:
        """Hold layer ``name``'s lock (waiting until ``deadline``, a ``time.monotonic``)."""
        fd = os.open(self.layers / f"{name}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise SandboxFailure(
                            f"layer {name} is being built by another process and did not "
                            "finish within the build's time budget"
                        ) from None
                    await asyncio.sleep(0.1)
            yield
        finally:
            os.close(fd)  # releases the lock


def mount_overlay(
    layers: Path, lowers: Sequence[str], upper: Path, work: Path, target: Path
) -> None:
    """Mount the overlay of ``lowers`` (layer names, bottom first) with ``upper`` on top at
    ``target``. Root only (a kernel overlay)."""
    if not lowers:
        raise SandboxFailure("an image with no layers cannot be mounted")
    if len(lowers) > MAX_LAYERS:
        raise SandboxFailure(f"an image of {len(lowers)} layers is over the {MAX_LAYERS} allowed")
    options = f"nosuid,nodev,lowerdir={':'.join(reversed(lowers))},upperdir={upper},workdir={work}"
    done = subprocess.run(
        ["mount", "-t", "overlay", "overlay", "-o", options, str(target)],
        cwd=layers,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    if done.returncode != 0:
        raise SandboxFailure(f"cannot mount the overlay at {target}: {done.stderr.strip()}")


def unmount_overlay(target: Path) -> None:
    unmount(target)


_OPAQUE = ("trusted.overlay.opaque", "user.overlay.opaque")
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def drop_from_upper(upper: Path, paths: Iterable[str]) -> None:
    """Take each of ``paths`` (relative) out of the upper directory ``upper`` of an overlay
    that is not mounted, so that the lower layers' version shows again: whatever the upper
    has there (a file, a directory, a link, a whiteout, an opaque directory) is removed,
    and no link is ever followed (the upper was written by the box). Above such a path, an
    entry that is not a plain directory (a link, a whiteout) is removed as well, and an
    opaque directory made transparent again (the layers' entries under it show again)."""
    top = os.open(upper, _DIRECTORY)
    try:
        for path in paths:
            parts = [part for part in path.split("/") if part not in ("", ".", "..")]
            if parts:
                _drop(top, parts)
    finally:
        os.close(top)


def _drop(top: int, parts: list[str]) -> None:
    fd = os.dup(top)
    try:
        for part in parts[:-1]:
            try:
                info = os.stat(part, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                return  # nothing of the box's here: the layers' own shows
            if not stat.S_ISDIR(info.st_mode):
                _remove(fd, part, info)
                return
            child = os.open(part, _DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
            for name in _OPAQUE:
                with contextlib.suppress(OSError):
                    os.removexattr(fd, name)
        with contextlib.suppress(FileNotFoundError):
            _remove(fd, parts[-1], os.stat(parts[-1], dir_fd=fd, follow_symlinks=False))
    finally:
        os.close(fd)


def _remove(fd: int, name: str, info: os.stat_result) -> None:
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(name, dir_fd=fd)  # fd-based: never follows a link out of the tree
    else:
        os.unlink(name, dir_fd=fd)


def empty_directory(path: Path) -> None:
    """Remove everything in ``path`` (not following links), keeping ``path``."""
    fd = os.open(path, _DIRECTORY)
    try:
        for name in os.listdir(fd):
            _remove(fd, name, os.stat(name, dir_fd=fd, follow_symlinks=False))
    finally:
        os.close(fd)


def extract(tar: Path, into: Path) -> None:
    """Unpack a root file system tar as root, owners, modes, devices and xattrs kept."""
    done = subprocess.run(
        [
            "tar",
            "-x",
            "-p",
            "--numeric-owner",
            "--xattrs",
            "--xattrs-include=*",
            "-f",
            str(tar),
            "-C",
            str(into),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if done.returncode != 0:
        raise SandboxFailure(f"cannot unpack the base image {tar}: {done.stderr.strip()[-500:]}")


def tar_identity(tar: Path) -> str:
    """What names a base tar's content cheaply: its real path, size and modification time
    (the base builder writes a new file, never rewrites one in place)."""
    info = tar.stat()
    return f"{tar.resolve()}:{info.st_size}:{info.st_mtime_ns}"


def is_empty(path: Path) -> bool:
    with os.scandir(path) as entries:
        return next(entries, None) is None
